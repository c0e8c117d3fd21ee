package zibal_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/sandbank"
)

// TestZibalProtocol: Zibal at its own paths, as a third-party client
// would call it (JSON bodies, results in the body), the payer's page and
// its buttons, and the control API answering the browser's next request.
func TestZibalProtocol(t *testing.T) {
	bank := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(bank.Handler())
	defer srv.Close()
	post := func(path, body string) map[string]any {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
		}
		return out
	}
	const cb = "https://shop.example/payments/pay_x/return"
	for _, tt := range []struct {
		body   string
		result float64
	}{
		{`{"merchant":"","amount":20000,"callbackUrl":"` + cb + `"}`, 102},
		{`{"merchant":"not valid!","amount":20000,"callbackUrl":"` + cb + `"}`, 104},
		{`{"merchant":"zibal","amount":1000,"callbackUrl":"` + cb + `"}`, 105},
		{`{"merchant":"zibal","amount":20000,"callbackUrl":"ftp://x"}`, 106},
		{`{"merchant":"zibal","amount":20000000000,"callbackUrl":"` + cb + `"}`, 113},
	} {
		if got := post("/v1/request", tt.body); got["result"] != tt.result {
			t.Errorf("%s: %v, want result %v", tt.body, got, tt.result)
		}
	}
	// A trackId per payment; the control API pays one, another by the page.
	ids := make([]string, 2)
	for i := range ids {
		got := post("/v1/request", `{"merchant":"zibal","amount":"20000","callbackUrl":"`+cb+`","orderId":"pay_x","description":"d"}`)
		id, ok := got["trackId"].(float64)
		if got["result"] != float64(100) || !ok || id <= 0 {
			t.Fatalf("request = %v", got)
		}
		ids[i] = strconv.FormatInt(int64(id), 10)
	}
	resp, err := http.Post(srv.URL+"/_sandbank/zibal/payments/"+ids[0]+"/pay", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ctl struct {
		Redirect, Method string
		Form             map[string]string
	}
	_ = json.NewDecoder(resp.Body).Decode(&ctl)
	resp.Body.Close()
	if resp.StatusCode != 200 || ctl.Method != "GET" || !strings.HasPrefix(ctl.Redirect, cb+"?") || !strings.Contains(ctl.Redirect, "trackId="+ids[0]) ||
		!strings.Contains(ctl.Redirect, "success=1") || !strings.Contains(ctl.Redirect, "status=2") || ctl.Form == nil {
		t.Errorf("control pay = %d %+v", resp.StatusCode, ctl)
	}
	if resp, _ := http.Post(srv.URL+"/_sandbank/zarinpal/payments/"+ids[1]+"/pay", "", nil); resp.StatusCode != 404 {
		t.Errorf("another gateway's control path: %d, want 404", resp.StatusCode)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.PostForm(srv.URL+"/start/"+ids[1]+"/cancel", url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "success=0") || !strings.Contains(loc, "status=3") {
		t.Errorf("cancel button = %d %s", resp.StatusCode, loc)
	}
	// Verify, then again (201, no details), inquiry with its status.
	v := post("/v1/verify", `{"merchant":"zibal","trackId":`+ids[0]+`}`)
	if v["result"] != float64(100) || v["amount"] != float64(20000) || v["status"] != float64(1) || v["refNumber"] == nil {
		t.Errorf("verify = %v", v)
	}
	v = post("/v1/verify", `{"merchant":"zibal","trackId":"`+ids[0]+`"}`)
	if v["result"] != float64(201) || v["amount"] != nil || v["refNumber"] != nil {
		t.Errorf("verify again = %v", v)
	}
	q := post("/v1/inquiry", `{"merchant":"zibal","trackId":`+ids[0]+`}`)
	if q["result"] != float64(100) || q["status"] != float64(1) || q["verifiedAt"] == nil {
		t.Errorf("inquiry = %v", q)
	}
	if q := post("/v1/verify", `{"merchant":"zibal","trackId":`+ids[1]+`}`); q["result"] != float64(202) {
		t.Errorf("verify of a cancelled = %v", q)
	}
	if q := post("/v1/inquiry", `{"merchant":"other","trackId":`+ids[1]+`}`); q["result"] != float64(203) {
		t.Errorf("another merchant's inquiry = %v", q)
	}
	// A Zibal trackId is not a Zarinpal StartPay page, and back.
	if r, _ := http.Get(srv.URL + "/pg/StartPay/" + ids[0]); r.StatusCode != 404 {
		t.Errorf("a zibal trackId on Zarinpal's page: %d", r.StatusCode)
	}
}
