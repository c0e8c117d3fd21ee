package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/web/api"
)

// spec is the OpenAPI document with its router: every request the tests
// send and every answer they get is validated against it.
type spec struct {
	doc    *openapi3.T
	router routers.Router
}

func loadSpec(t testing.TB) *spec {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi.json is not OpenAPI 3.1 (%s)", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json is not a valid document: %v", err)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &spec{doc: doc, router: r}
}

// apiClient talks to the API with one bearer token and no cookies.
type apiClient struct {
	t     testing.TB
	app   *apptest.App
	spec  *spec
	token string
	http  *http.Client
	// fail reports a broken contract: t.Fatalf, or t.Errorf for clients
	// used from other goroutines.
	fail func(format string, args ...any)
}

func newAPIClient(t testing.TB, app *apptest.App, sp *spec, token string) *apiClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	return &apiClient{t: t, app: app, spec: sp, token: token, fail: t.Fatalf, http: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	Status int
	Header http.Header
	Body   string
}

// Problem code of a problem+json answer ("" otherwise).
func (a answer) Code() string {
	if !strings.HasPrefix(a.Header.Get("Content-Type"), api.MIMEProblem) {
		return ""
	}
	m := regexp.MustCompile(`"code":"([a-z_]+)"`).FindStringSubmatch(a.Body)
	if m == nil {
		return ""
	}
	return m[1]
}

// do sends a request. The request must match the document unless
// specInvalid (a test of what the server does with a request the document
// forbids: the validator must refuse it too); the answer must always match.
func (c *apiClient) do(method, path string, header map[string]string, body string, specInvalid bool) answer {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.app.URL+path, rd)
	if err != nil {
		c.fail("%v", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	// The document's paths have no host: route on the path.
	vreq := req.Clone(context.Background())
	vreq.URL = &url.URL{Path: req.URL.Path, RawQuery: req.URL.RawQuery}
	if body != "" {
		vreq.Body = io.NopCloser(strings.NewReader(body))
	}
	route, params, err := c.spec.router.FindRoute(vreq)
	if err != nil {
		c.fail("%s %s: not in openapi.json: %v", method, path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerPresent, IncludeResponseStatus: true, MultiError: true}}
	verr := openapi3filter.ValidateRequest(context.Background(), in)
	switch {
	case verr != nil && !specInvalid:
		c.fail("%s %s: request does not match openapi.json: %v", method, path, verr)
	case verr == nil && specInvalid:
		c.fail("%s %s: openapi.json accepts a request the test expects it to refuse", method, path)
	}

	resp, err := c.http.Do(req)
	if err != nil {
		c.fail("%s %s: %v", method, path, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(b)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.fail("%s %s: answer %d does not match openapi.json: %v\n%s", method, path, resp.StatusCode, err, b)
	}
	if resp.Header.Get("Set-Cookie") != "" {
		c.fail("%s %s: the API set a cookie: %q", method, path, resp.Header.Get("Set-Cookie"))
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return openapi3filter.ErrAuthenticationServiceMissing
	}
	return nil
}

func (c *apiClient) get(path string) answer {
	c.t.Helper()
	return c.do(http.MethodGet, path, nil, "", false)
}

func (c *apiClient) post(path, key, body string) answer {
	c.t.Helper()
	return c.do(http.MethodPost, path, map[string]string{"Idempotency-Key": key}, body, false)
}
