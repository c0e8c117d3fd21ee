package book

import "testing"

func TestFakeCardsPassLuhn(t *testing.T) {
	b := New(Options{Seed: 3})
	b.Lock()
	defer b.Unlock()
	for i := 0; i < 200; i++ {
		card, err := b.NewCardLocked()
		if err != nil {
			t.Fatal(err)
		}
		if len(card) != 16 || luhnCheckDigit(card[:15]) != int(card[15]-'0') {
			t.Fatalf("card %q fails Luhn", card)
		}
		sum := 0
		for j := 0; j < 16; j++ {
			d := int(card[15-j] - '0')
			if j%2 == 1 {
				d *= 2
				if d > 9 {
					d -= 9
				}
			}
			sum += d
		}
		if sum%10 != 0 {
			t.Fatalf("card %q fails an independent Luhn check", card)
		}
	}
}

func TestMaskPAN(t *testing.T) {
	if got := MaskPAN("6037991234565678"); got != "603799******5678" {
		t.Errorf("maskPAN = %q", got)
	}
}
