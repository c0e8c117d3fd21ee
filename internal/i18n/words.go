package i18n

import "strings"

// Words writes a whole number n in words in language l ("صد و بیست
// هزار", "one hundred twenty thousand"): a confirmation step says an
// amount in words as well as in digits, as a cheque does. A negative
// number starts with «منفی» / "minus" (never dropped: an amount in words
// must say what the digits say), math.MinInt64 included.
func Words(l Lang, n int64) string {
	sign := ""
	if n < 0 {
		sign = "minus "
		if l == FA {
			sign = "منفی "
		}
	}
	// The magnitude as milliards and the rest, both ≥ 0, without -n,
	// which overflows at math.MinInt64.
	hi, lo := n/billion, n%billion
	if n < 0 {
		hi, lo = -hi, -lo
	}
	if l == FA {
		return sign + wordsFA(hi, lo)
	}
	return sign + wordsEN(hi, lo)
}

// billion is 10^9, «میلیارد».
const billion = 1_000_000_000

var (
	faOnes     = []string{"", "یک", "دو", "سه", "چهار", "پنج", "شش", "هفت", "هشت", "نه"}
	faTeens    = []string{"ده", "یازده", "دوازده", "سیزده", "چهارده", "پانزده", "شانزده", "هفده", "هجده", "نوزده"}
	faTens     = []string{"", "", "بیست", "سی", "چهل", "پنجاه", "شصت", "هفتاد", "هشتاد", "نود"}
	faHundreds = []string{"", "صد", "دویست", "سیصد", "چهارصد", "پانصد", "ششصد", "هفتصد", "هشتصد", "نهصد"}
	faScales   = []string{"", "هزار", "میلیون", "میلیارد"}

	enOnes   = []string{"", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	enTeens  = []string{"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	enTens   = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
	enScales = []string{"", "thousand", "million", "billion", "trillion", "quadrillion", "quintillion"}
)

// groups splits hi·10^9 + lo (0 ≤ lo < 10^9) into groups of three
// digits, lowest first.
func groups(hi, lo int64) []int {
	var out []int
	for i := 0; lo > 0 || (hi > 0 && i < 3); i++ {
		out = append(out, int(lo%1000))
		lo /= 1000
	}
	for hi > 0 {
		out = append(out, int(hi%1000))
		hi /= 1000
	}
	return out
}

// wordsFA says hi·10^9 + lo in Persian.
func wordsFA(hi, lo int64) string {
	if hi == 0 && lo == 0 {
		return "صفر"
	}
	// From 10^12 up Persian counts milliards, the count said as a number
	// of its own: «هزار میلیارد», «هزار و پانصد میلیارد», «دو میلیون
	// میلیارد» (a smaller number: this ends).
	if hi >= 1000 {
		s := wordsFA(hi/billion, hi%billion) + " " + faScales[3]
		if lo > 0 {
			s += " و " + wordsFA(0, lo)
		}
		return s
	}
	var parts []string
	gs := groups(hi, lo)
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

// wordsEN says hi·10^9 + lo in English.
func wordsEN(hi, lo int64) string {
	if hi == 0 && lo == 0 {
		return "zero"
	}
	var parts []string
	gs := groups(hi, lo)
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
