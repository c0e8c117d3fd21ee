// Package admin holds the admin console's pages (/admin/...): each page's
// templ component and its view model, one file per page (dashboard.templ
// and dashboard.go, …), and what they share in parts.templ and parts.go.
// It uses views for the layout and the parts every page shares; views
// never imports it.
package admin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/views"
)

// The view models and helpers the admin pages share; each page's own
// view model is in its <page>.go.

// Section names the admin console's page, for its navigation.
type Section string

// Sections of the admin console.
const (
	SectionDashboard Section = "dashboard"
	SectionTopUps    Section = "payments"
	SectionUsers     Section = "users"
	SectionAudit     Section = "audit"
	// SectionWithdrawals is the cash-out queue.
	SectionWithdrawals Section = "withdrawals"
)

// Option is one choice of a select.
type Option struct {
	Value, Label string
}

// TopUpRow is one payment in the admin's lists.
type TopUpRow struct {
	PublicID    string
	Email       string
	UserID      int64
	AmountRials int64
	Gateway     string // as configured ("sandbox" for the sandbox bank)
	Status      string
	RefID       int64
	Card        string
	CreatedAt   time.Time
}

// LedgerRow is one movement of a wallet.
type LedgerRow struct {
	AmountRials   int64
	BalanceAfter  int64
	Kind          string
	TopUpPublicID string
	CreatedAt     time.Time
}

// UserRow is a user with their wallet.
type UserRow struct {
	ID           int64
	Email        string
	Role         string
	CreatedAt    time.Time
	BalanceRials int64
	// HeldRials is held from the balance (charges authorized, withdrawals
	// and card refunds under way): not available to spend.
	HeldRials int64
	// EmailVerifiedAt is when the owner confirmed the address (nil: not
	// yet).
	EmailVerifiedAt *time.Time
}

// AuditRow is one entry of the audit log.
type AuditRow struct {
	At            time.Time
	AdminEmail    string
	Action        string
	Result        string
	TopUpPublicID string
	TargetUserID  int64
	TargetEmail   string // the account acted on ("" when none)
	From, To      string
	Note          string
}

// arrow points from one status to the next in the reading direction.
// "‹" and "›" are glyphs of the shipped font (static/; "←" and "→" are
// not, and came from whatever font the machine had). Marked left-to-right
// (U+200E on each side) so that the bidi algorithm never mirrors them:
// the arrow is the one chosen here whatever surrounds it.
func arrow(p views.Page) string {
	if p.Lang.Dir() == "rtl" {
		return " \u200e‹\u200e "
	}
	return " \u200e›\u200e "
}

// tOr translates key, or gives fallback when the catalog has no such key
// (an action or actor this build does not know yet).
func tOr(p views.Page, key, fallback string) string {
	if i18n.Has(p.Lang, key) {
		return p.T(key)
	}
	return fallback
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// reconcileNote is the note an admin's reconciliation run leaves in the
// audit log (web/admin's reconcile writes it; stored rows keep it).
var reconcileNote = regexp.MustCompile(`^listed (\d+), credited (\d+), mismatches (\d+)$`)

// switchNote is the note of a gateway's switch (topup.Service's
// SwitchGateway writes it): the gateway, "off" or "on", and the admin's
// own note after ": ".
var switchNote = regexp.MustCompile(`^(\S+) (off|on)(?:: ([\s\S]*))?$`)

// auditNote is an audit row's note in the page's language: the note of a
// reconciliation run is counts, and a gateway's switch is which and how,
// said in words; an admin's own note is shown as written.
func auditNote(p views.Page, r AuditRow) string {
	switch r.Action {
	case "reconcile":
		if m := reconcileNote.FindStringSubmatch(r.Note); m != nil {
			n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
			return p.T("admin.audit.reconcile_note", "listed", n(m[1]), "credited", n(m[2]), "mismatches", n(m[3]))
		}
	case "gateway_switch":
		if m := switchNote.FindStringSubmatch(r.Note); m != nil {
			key := "admin.audit.switched_on"
			if m[2] == "off" {
				key = "admin.audit.switched_off"
			}
			// The gateway by its name in the page's language, isolated
			// (FSI…PDI) so that a Latin name keeps its place in a
			// Persian sentence; the admin's note after it too.
			text := p.T(key, "gateway", i18n.UserText(tOr(p, "gateway.name."+m[1], m[1])))
			if m[3] != "" {
				text += ": " + i18n.Isolate(m[3])
			}
			return text
		}
	}
	if strings.HasPrefix(r.Action, "cli_") && r.Note == cliNote {
		return p.T("admin.audit.cli_note")
	}
	return r.Note
}

// cliNote is the note internal/auth writes on the command line's rows.
const cliNote = "from the command line"

// roleAction reports whether an audit row's from and to are roles (the
// command line's promote, demote and admin creation), not payment
// statuses.
func roleAction(action string) bool {
	switch action {
	case "cli_promote", "cli_demote", "cli_create":
		return true
	}
	return false
}

// EmailOddities lists, by code point, the characters of an address that
// are not printable ASCII ("" when there are none), so that an admin sees
// "U+0430" where a Cyrillic "а" poses as a Latin "a", and sees invisible
// characters at all.
func EmailOddities(email string) string {
	var out []string
	for _, r := range email {
		if r < 0x21 || r > 0x7e {
			out = append(out, fmt.Sprintf("U+%04X", r))
		}
	}
	return strings.Join(out, " ")
}
