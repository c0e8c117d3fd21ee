package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/auth"
)

// operatorDocs is README.md and every docs/*.md, as one text per file.
func operatorDocs(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// TestOperatorDocs checks what an operator copies in the first hour: the
// Go version is go.mod's; the PostgreSQL privileges the migrations need
// are listed; no documented password makes an account (the example admin
// would be weak); the standalone bank's recipe gives a merchant id the
// bank accepts.
func TestOperatorDocs(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+(?:\.\d+)?)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	goVersion := string(m[1])
	docs := operatorDocs(t)
	all := strings.Join(func() []string {
		var s []string
		for _, d := range docs {
			s = append(s, d)
		}
		return s
	}(), "\n")

	needs := regexp.MustCompile(`needs nothing but Go (\d+\.\d+(?:\.\d+)?)`).FindAllStringSubmatch(all, -1)
	if len(needs) == 0 {
		t.Error("the docs do not say which Go `make run` needs")
	}
	for _, n := range needs {
		if n[1] != goVersion {
			t.Errorf("the docs say Go %s, go.mod needs %s", n[1], goVersion)
		}
	}
	for _, want := range []string{"CREATE EXTENSION", "pg_trgm", "CREATE INDEX CONCURRENTLY"} {
		if !strings.Contains(all, want) {
			t.Errorf("the docs do not list the PostgreSQL privilege for %q", want)
		}
	}
	for _, pw := range regexp.MustCompile(`echo '([^']*)' \| [^\n]*user create`).FindAllStringSubmatch(all, -1) {
		if auth.CheckPassword(pw[1]) == nil {
			t.Errorf("the docs pipe %q into user create, and it is accepted", pw[1])
		}
	}
	if auth.CheckPassword("a-long-password") == nil {
		t.Error("a-long-password, once README's example, is accepted")
	}
	if strings.Contains(all, "ZARINPAL_MERCHANT_ID=00000000-0000-0000-0000-000000000000") {
		t.Error("the docs give the all-zeros merchant id, which the sandbox bank refuses")
	}
	if !regexp.MustCompile(`sandbank --addr[^\n]*\n?[^\n]*\n?[^\n]*ZARINPAL_MERCHANT_ID=[0-9a-f-]{36}`).MatchString(all) {
		t.Error("the standalone bank's recipe gives no merchant id")
	}
}
