package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func newHTTPServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
