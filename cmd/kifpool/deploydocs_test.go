package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
)

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel))) // #nosec G304 -- files of the repository
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The production path says what production needs (issue 29, items 12 and
// 13): the environment file names only real options, GATEWAYS (not the
// older GATEWAY) with a line for every gateway's required settings, mail
// (SMTP_URL, MAIL_FROM) and support; the Deploy steps and the go-live
// checklist ask for mail, the checklist for a reset mail that arrives;
// every `openssl rand` is the same length; and every file a unit's
// Documentation= names is installed by a Deploy step.
func TestDeployPathIsComplete(t *testing.T) {
	env := readRepoFile(t, "deploy/kifpool.env.example")
	known := map[string]bool{}
	for _, o := range config.Options() {
		known[o.Name] = true
	}
	set := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#?([A-Z][A-Z0-9_]+)=`).FindAllStringSubmatch(env, -1) {
		if !known[m[1]] {
			t.Errorf("kifpool.env.example sets %s, which is no option", m[1])
		}
		set[m[1]] = true
	}
	if set["GATEWAY"] || !strings.Contains(env, "\nGATEWAYS=") {
		t.Error("kifpool.env.example chooses the gateway with GATEWAY=, not GATEWAYS=")
	}
	for _, d := range drivers.All() {
		for _, st := range d.Settings {
			if st.Required && !set[st.Env] {
				t.Errorf("kifpool.env.example has no line for %s (%s)", st.Env, d.Name)
			}
		}
	}
	for _, name := range []string{"SMTP_URL", "MAIL_FROM", "SUPPORT_EMAIL", "OPERATOR_NAME"} {
		if !set[name] {
			t.Errorf("kifpool.env.example has no line for %s", name)
		}
	}

	ops := readRepoFile(t, "docs/operations.md")
	deploy := section(t, ops, "## Deploy")
	live := section(t, ops, "## Going live with a real gateway")
	for _, want := range []string{"SMTP_URL", "MAIL_FROM", "GATEWAYS", "SUPPORT_EMAIL"} {
		if !strings.Contains(deploy, want) {
			t.Errorf("operations.md's Deploy does not mention %s", want)
		}
	}
	if strings.Contains(deploy, "`GATEWAY=") {
		t.Error("operations.md's Deploy still sets GATEWAY=")
	}
	if !strings.Contains(live, "SMTP_URL") || !strings.Contains(live, "reset mail arrives") {
		t.Error("the go-live checklist has no mail step (a reset mail arrives)")
	}

	var lengths []string
	for _, f := range []string{"docs/operations.md", "deploy/kifpool.env.example", "docs/configuration.md", "README.md", "SECURITY.md"} {
		for _, m := range regexp.MustCompile(`openssl rand -base64 (\d+)`).FindAllStringSubmatch(readRepoFile(t, f), -1) {
			if !slices.Contains(lengths, m[1]) {
				lengths = append(lengths, m[1])
			}
		}
	}
	if len(lengths) != 1 {
		t.Errorf("openssl rand with lengths %v: want one everywhere", lengths)
	}

	units, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "systemd", "*.service"))
	if len(units) == 0 {
		t.Fatal("no systemd units")
	}
	for _, u := range units {
		b, err := os.ReadFile(u) // #nosec G304 -- files of the repository
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^Documentation=file://(\S+)`).FindAllStringSubmatch(string(b), -1) {
			if !strings.Contains(deploy, " "+m[1]+"`") {
				t.Errorf("%s: Documentation=%s, which no Deploy step installs", filepath.Base(u), m[1])
			}
		}
	}
}

// section is the text of a Markdown section from its heading to the next
// heading of the same level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		t.Fatalf("no section %q", heading)
	}
	rest := doc[i+1:]
	if j := strings.Index(rest[len(heading):], "\n## "); j >= 0 {
		return rest[:len(heading)+j]
	}
	return rest
}

// The first thing /admin asks a new admin for is the operator's one-time
// enrolment code, and the accounts and admin guides say so before the QR
// code (issue 29, item 14).
func TestAdminDocsDescribeTheEnrolmentCode(t *testing.T) {
	for _, f := range []string{"docs/accounts.md", "docs/admin.md"} {
		doc := readRepoFile(t, f)
		code, qr := strings.Index(doc, "enrolment code"), strings.Index(doc, "QR code")
		if code < 0 || (qr >= 0 && qr < code) {
			t.Errorf("%s does not describe the enrolment code before the QR code", f)
		}
	}
	if !strings.Contains(readRepoFile(t, "docs/accounts.md"), "`enrol_code`") {
		t.Error("docs/accounts.md does not name the enrolment code's field")
	}
}

// docs/webhooks.md says how to test endpoints locally, not only return
// origins (issue 29, item 10).
func TestWebhookDocsSayHowToTestEndpointsLocally(t *testing.T) {
	endpoints := section(t, readRepoFile(t, "docs/webhooks.md"), "## Webhook endpoints")
	if !strings.Contains(endpoints, "WEBHOOK_ALLOW_LOOPBACK=1") || !strings.Contains(endpoints, "http://127.0.0.1:") {
		t.Error("docs/webhooks.md's endpoints section does not say how to test a local receiver")
	}
}

// The environment file is read by systemd (EnvironmentFile) and, for
// `kifpool check` and `kifpool reconcile`, sourced by a shell: every line,
// the commented examples too once uncommented, is a valid assignment that
// sets exactly its value (a value with spaces or < > unquoted stopped the
// shell half-way, and check ran with half the settings).
func TestEnvFileSourcesInAShell(t *testing.T) {
	env := readRepoFile(t, "deploy/kifpool.env.example")
	on := regexp.MustCompile(`(?m)^#([A-Z][A-Z0-9_]+=)`).ReplaceAllString(env, "$1")
	path := filepath.Join(t.TempDir(), "kifpool.env")
	if err := os.WriteFile(path, []byte(on), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-ec", `set -a; . "$1"; set +a; printf '%s\n' "$MAIL_FROM" "$OPERATOR_NAME" "$SUPPORT_PHONE" "$METRICS_TOKEN"`, "sh", path).CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing the environment file: %v\n%s", err, out)
	}
	want := "Kifpool <noreply@pay.example.com>\nCHANGE-ME Company Ltd\n+98 21 1234 5678\nCHANGE-ME-another-random-token\n"
	if string(out) != want {
		t.Fatalf("sourced values:\n%s\nwant:\n%s", out, want)
	}
}
