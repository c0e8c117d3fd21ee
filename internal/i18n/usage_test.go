package i18n

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestEveryKeyIsUsed fails when a message key is never referred to by the
// code or the templates (a key dropped from a page but left in the
// catalog), and TestEveryUsedKeyExists when a literal key used somewhere
// is missing from a language. Keys built at run time are recognised by a
// literal prefix ending in "." ("status." + s) or by the "_title" suffix
// the error pages add.
func sourceLiterals(t *testing.T) map[string]bool {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lit := regexp.MustCompile(`"([a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)*\.?)"`)
	out := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "data":
				return filepath.SkipDir
			}
			// The sandbox bank's pages use their own table
			// (internal/sandbank/page), never this catalogue.
			if path == filepath.Join(root, "internal", "sandbank") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_templ.go") ||
			(!strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".templ")) ||
			strings.HasPrefix(path, filepath.Join(root, "internal", "i18n")) && strings.Contains(name, "messages") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEveryKeyIsUsed(t *testing.T) {
	used := sourceLiterals(t)
	var unused []string
	for _, k := range Keys(FA) {
		if used[k] || (strings.HasSuffix(k, "_title") && used[strings.TrimSuffix(k, "_title")]) {
			continue
		}
		dynamic := false
		for i := len(k) - 1; i > 0; i-- {
			if k[i] == '.' && used[k[:i+1]] {
				dynamic = true
				break
			}
		}
		if !dynamic {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("message keys used nowhere (remove them or use them): %v", unused)
	}
}

func TestEveryUsedKeyExists(t *testing.T) {
	prefixes := map[string]bool{}
	for _, k := range Keys(FA) {
		if i := strings.Index(k, "."); i > 0 {
			prefixes[k[:i]] = true
		}
	}
	// Names that share a message's namespace but are not messages: the
	// webhook event types (a contract with partners, never translated).
	notMessages := map[string]bool{"topup.credited": true, "topup.failed": true, "topup.needs_review": true, "topup.refunded": true,
		"transfer.already_exists": true} // Jibit's error code for a transferID it has seen
	for lit := range sourceLiterals(t) {
		i := strings.Index(lit, ".")
		if i <= 0 || strings.HasSuffix(lit, ".") || !prefixes[lit[:i]] || notMessages[lit] || isFileName(lit) {
			continue // not a message key
		}
		for _, l := range Langs {
			if !Has(l, lit) && !strings.Contains(lit, ".go") {
				t.Errorf("key %q is used but missing in %s", lit, l)
			}
		}
	}
}

// isFileName reports a literal naming a file (an asset such as "app.css"),
// which may share a message's namespace but is not a message.
func isFileName(lit string) bool {
	switch path.Ext(lit) {
	case ".css", ".js", ".go", ".json", ".png", ".svg", ".woff2", ".ico", ".txt":
		return true
	}
	return false
}
