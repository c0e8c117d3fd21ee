package i18n_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/i18n"
)

const (
	fsi = "\u2068"
	pdi = "\u2069"
)

func TestIsolate(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"latin with brackets", "Shop (IR)", fsi + "Shop (IR)" + pdi},
		{"e-mail", "ali@x.com", fsi + "ali@x.com" + pdi},
		{"persian keeps its zwnj", "کیف‌پول ۱۲", fsi + "کیف‌پول ۱۲" + pdi},
		{"right-to-left override dropped", "Shop\u202E 000,05", fsi + "Shop 000,05" + pdi},
		{"embeddings and overrides dropped", "\u202Aa\u202Bb\u202Cc\u202Dd\u202Ee", fsi + "abcde" + pdi},
		{"isolates cannot close ours", "x\u2069 y\u2066\u2067\u2068", fsi + "x y" + pdi},
		{"marks dropped", "\u200Ea\u200Fb\u061Cc", fsi + "abc" + pdi},
		{"zero-width joiner is no bidi control", "a\u200Db", fsi + "a\u200Db" + pdi},
		{"empty", "", ""},
		{"only controls", "\u202E\u2069", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := i18n.Isolate(tt.in); got != tt.want {
				t.Errorf("Isolate(%+q) = %+q, want %+q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTIsolatesUserText(t *testing.T) {
	tests := []struct {
		name string
		lang i18n.Lang
		key  string
		args []any
		want string
	}{
		{"latin merchant in persian", i18n.FA, "history.charge_paid", []any{"merchant", i18n.UserText("Shop (IR)")},
			"پرداخت به " + fsi + "Shop (IR)" + pdi},
		{"override cannot turn the sentence", i18n.FA, "history.charge_paid", []any{"merchant", i18n.UserText("\u202EShop (IR)")},
			"پرداخت به " + fsi + "Shop (IR)" + pdi},
		{"persian name in english", i18n.EN, "history.transfer_to", []any{"who", i18n.UserText("علی ۱۲")},
			"Transfer to " + fsi + "علی ۱۲" + pdi},
		{"e-mail in persian", i18n.FA, "footer.operator", []any{"name", i18n.UserText("ali@x.com")},
			"کیف‌پول را " + fsi + "ali@x.com" + pdi + " اداره می‌کند."},
		{"a plain string is not isolated", i18n.FA, "footer.operator", []any{"name", "Kifpool 123"},
			"کیف‌پول را Kifpool 123 اداره می‌کند."},
		{"an amount beside it is not isolated", i18n.EN, "checkout.state.paid", []any{"amount", i18n.Money(50), "merchant", i18n.UserText("A")},
			"5 tomans paid to " + fsi + "A" + pdi + "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := i18n.T(tt.lang, tt.key, tt.args...); got != tt.want {
				t.Errorf("T(%s, %q, %v) = %+q, want %+q", tt.lang, tt.key, tt.args, got, tt.want)
			}
		})
	}
}
