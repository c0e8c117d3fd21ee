package i18n

import "strings"

// Words writes a whole number n ≥ 0 in words in language l ("صد و بیست
// هزار", "one hundred twenty thousand"): a confirmation step says an
// amount in words as well as in digits, as a cheque does.
func Words(l Lang, n int64) string {
	if n < 0 {
		return Words(l, -n) // never for money: amounts shown in words are positive
	}
	if l == FA {
		return wordsFA(n)
	}
	return wordsEN(n)
}

var (
	faOnes     = []string{"", "یک", "دو", "سه", "چهار", "پنج", "شش", "هفت", "هشت", "نه"}
	faTeens    = []string{"ده", "یازده", "دوازده", "سیزده", "چهارده", "پانزده", "شانزده", "هفده", "هجده", "نوزده"}
	faTens     = []string{"", "", "بیست", "سی", "چهل", "پنجاه", "شصت", "هفتاد", "هشتاد", "نود"}
	faHundreds = []string{"", "صد", "دویست", "سیصد", "چهارصد", "پانصد", "ششصد", "هفتصد", "هشتصد", "نهصد"}
	faScales   = []string{"", "هزار", "میلیون", "میلیارد", "هزار میلیارد", "میلیون میلیارد", "میلیارد میلیارد"}

	enOnes   = []string{"", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	enTeens  = []string{"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	enTens   = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
	enScales = []string{"", "thousand", "million", "billion", "trillion", "quadrillion", "quintillion"}
)

// groups splits n into groups of three digits, lowest first.
func groups(n int64) []int {
	var out []int
	for n > 0 {
		out = append(out, int(n%1000))
		n /= 1000
	}
	return out
}

func wordsFA(n int64) string {
	if n == 0 {
		return "صفر"
	}
	var parts []string
	gs := groups(n)
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		if g == 0 {
			continue
		}
		var w []string
		if h := g / 100; h > 0 {
			w = append(w, faHundreds[h])
		}
		switch r := g % 100; {
		case r >= 20:
			w = append(w, faTens[r/10])
			if r%10 > 0 {
				w = append(w, faOnes[r%10])
			}
		case r >= 10:
			w = append(w, faTeens[r-10])
		case r > 0:
			w = append(w, faOnes[r])
		}
		s := strings.Join(w, " و ")
		if i > 0 {
			if g == 1 && i == 1 && i == len(gs)-1 {
				s = faScales[i] // «هزار», not «یک هزار»
			} else {
				s += " " + faScales[i]
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " و ")
}

func wordsEN(n int64) string {
	if n == 0 {
		return "zero"
	}
	var parts []string
	gs := groups(n)
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		if g == 0 {
			continue
		}
		var w []string
		if h := g / 100; h > 0 {
			w = append(w, enOnes[h], "hundred")
		}
		switch r := g % 100; {
		case r >= 20:
			t := enTens[r/10]
			if r%10 > 0 {
				t += "-" + enOnes[r%10]
			}
			w = append(w, t)
		case r >= 10:
			w = append(w, enTeens[r-10])
		case r > 0:
			w = append(w, enOnes[r])
		}
		if i > 0 {
			w = append(w, enScales[i])
		}
		parts = append(parts, strings.Join(w, " "))
	}
	return strings.Join(parts, " ")
}
