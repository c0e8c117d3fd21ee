package wire

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestClean(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"card 6037 9912 3456 7890 refused", "card 603799******7890 refused"},
		{"ref 14411779380 ok", "ref 14411779380 ok"},
		{"a\x00b\r\n  c", "a b c"},
		{"\xff\xfe", "�"},
	} {
		if got := Clean(tt.in, 100); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Clean(strings.Repeat("ب", 300), 10); got != strings.Repeat("ب", 10) {
		t.Errorf("not cut: %q", got)
	}
}

func TestMaskPAN(t *testing.T) {
	for in, want := range map[string]string{
		"6219861012345678": "621986******5678", "621986****5678": "621986****5678",
		"6219-8610-1234-5678": "621986******5678", "12345": "", "<b>6219861012345678</b>": "",
	} {
		if got := MaskPAN(in); got != want {
			t.Errorf("MaskPAN(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerminalID(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"13000001", "13000001"},
		{" 5000001\n", "5000001"},
		{"0", "0"},
		{strings.Repeat("9", 18), strings.Repeat("9", 18)},
		{strings.Repeat("9", 19), ""},
		{"", ""},
		{"   ", ""},
		{"13a00001", ""},
		{"-1300", ""},
		{"13 00", ""},
		{"١٣٠٠", ""}, // Persian digits are not the bank's
	} {
		got, err := TerminalID(tt.in)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("TerminalID(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestBaseURLAndNumbers(t *testing.T) {
	for in, ok := range map[string]bool{
		"https://sep.shaparak.ir/": true, "http://127.0.0.1:9000": true, "http://localhost:1": true,
		"http://sep.shaparak.ir": false, "ftp://x": false, "https://x/?a=1": false, "https://u:p@x": false,
	} {
		if _, err := BaseURL(in, "the terminal id"); (err == nil) != ok {
			t.Errorf("BaseURL(%q): %v", in, err)
		}
	}
	for in, want := range map[string]int64{`12`: 12, `"12"`: 12, ` "-6" `: -6, `1000.0`: 1000, `"25000.00"`: 25000,
		`9007199254740993.0`: 9007199254740993} {
		if got, ok := FlexInt([]byte(in)); !ok || got != want {
			t.Errorf("FlexInt(%s) = %d %v", in, got, ok)
		}
	}
	for _, in := range []string{`null`, `""`, `"x"`, `1.5`, `{}`, `1000.`, `1e3`, `.0`, `99999999999999999999.0`} {
		if _, ok := FlexInt([]byte(in)); ok {
			t.Errorf("FlexInt(%s) accepted", in)
		}
	}
	if FlexString([]byte(`"a\"b"`)) != `a"b` || FlexString([]byte(`42`)) != "42" || FlexString([]byte(`true`)) != "" {
		t.Error("FlexString")
	}
	for in, want := range map[string]string{`"ab\/cd+e="`: "ab/cd+e=", `"\ud83d\ude00"`: "\U0001F600", `"bad\q"`: "", `" x "`: " x "} {
		if got := FlexString([]byte(in)); got != want {
			t.Errorf("FlexString(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"3", 3 * time.Second},
		{" 120 ", 2 * time.Minute},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second},
		{now.Add(-10 * time.Second).Format(http.TimeFormat), 0},
		{"-5", 0},
		{"999999999999", 0},
		{"soon", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
