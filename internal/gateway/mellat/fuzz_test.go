package mellat_test

import (
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway/mellat"
)

// FuzzReadReturn: any answer a bank, a proxy or an attacker in between
// could send is read without a panic, as a return, a fault or an error,
// never two at once.
func FuzzReadReturn(f *testing.F) {
	for _, s := range []string{
		`<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><ns2:bpPayRequestResponse xmlns:ns2="x"><return>0,AF82</return></ns2:bpPayRequestResponse></S:Body></S:Envelope>`,
		`<Envelope><Body><Fault><faultstring>x</faultstring></Fault></Body></Envelope>`,
		`<html>502</html>`, `<return>`, `<return><return>1</return></return>`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ret, fault, err := mellat.ReadReturn([]byte(body))
		if err != nil && (ret != "" || fault != "") {
			t.Fatalf("an error with a return %q or fault %q", ret, fault)
		}
		if ret != "" && fault != "" {
			t.Fatalf("both a return %q and a fault %q", ret, fault)
		}
		if ret != strings.TrimSpace(ret) {
			t.Fatalf("return %q not trimmed", ret)
		}
	})
}
