package admin

import (
	"net/url"
	"strings"

	"github.com/a-h/templ"

	"github.com/kifpool/kifpool/views"
)

// GroupKey writes an authenticator key in groups of four characters.
func GroupKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(key[i:min(i+4, len(key))])
	}
	return b.String()
}

// recoveryFile is a data: URL of a text file with the recovery codes, for
// the download link (no request to the server; the codes are not kept).
func recoveryFile(p views.Page, codes []string) templ.SafeURL {
	text := p.T("twofa.recovery_file") + "\n\n" + strings.Join(codes, "\n") + "\n"
	return templ.SafeURL("data:text/plain;charset=utf-8," + url.PathEscape(text))
}

// TwoFactorView is the admin's second-factor page: enrolment (first
// visit) or the check (once per session).
type TwoFactorView struct {
	// EnrolCodeStep asks for the one-time enrolment code the operator
	// was given (before any secret is made or shown); EnrolCode carries
	// the accepted code through the enrolment form.
	EnrolCodeStep bool
	EnrolCode     string
	Enrol         bool
	Secret        string        // base32, for typing into an authenticator
	QR            templ.SafeURL // data: URL of a PNG QR code
	Next          string        // admin page to go on to
	ErrorKey      string
	ErrorArgs     []any
	// RecoveryCodes are shown once, right after enrolment.
	RecoveryCodes []string
}
