package views

import "time"

// WebhooksView is the partner page /account/webhooks: endpoints (the
// secret of one just created, shown once) and return origins.
type WebhooksView struct {
	Form      WebhookForm
	NewSecret string // the signing secret of the endpoint just created (or just rotated)
	NewURL    string
	Notice    string // message key of the last action's result
	Endpoints []WebhookRow
	// Origin form and list.
	OriginValue    string
	OriginErrorKey string
	// OriginErrorArgs are OriginErrorKey's (a throttle's seconds).
	OriginErrorArgs []any
	Origins         []OriginRow
	// EventTypes are the types offered (checkboxes "events").
	EventTypes []string
	// Loopback: http on loopback is accepted (development).
	Loopback bool
	// ListErrorKey is the message key of an action refused on a listed
	// endpoint (enabling one an administrator disabled).
	ListErrorKey string
	// Enable asks for the password (an admin's fresh second factor too)
	// before one of the owner's endpoints is enabled again.
	Enable *WebhookEnableForm
	// Rotate asks for the password (an admin's fresh second factor too)
	// before one of the owner's endpoints gets a new signing secret.
	Rotate *WebhookRotateForm
	// PreviousUntil, set when NewSecret is a rotated endpoint's: until
	// when its previous secret signs too.
	PreviousUntil *time.Time
}

// WebhookRotateForm confirms "new signing secret" of one endpoint.
type WebhookRotateForm struct {
	ID        int64
	URL       string
	ErrorKey  string
	ErrorArgs []any
}

// WebhookEnableForm confirms "enable again" of one endpoint.
type WebhookEnableForm struct {
	ID        int64
	URL       string
	ErrorKey  string
	ErrorArgs []any
}

// WebhookForm is the endpoint form as submitted.
type WebhookForm struct {
	URL       string
	Events    []string
	ErrorKey  string
	ErrorArgs []any
}

// Has reports whether the form checked event type t (a fresh form checks
// topup.credited).
func (f WebhookForm) Has(t string) bool {
	if f.URL == "" && f.ErrorKey == "" && len(f.Events) == 0 {
		return t == "topup.credited"
	}
	for _, e := range f.Events {
		if e == t {
			return true
		}
	}
	return false
}

// WebhookRow is one endpoint in a list.
type WebhookRow struct {
	ID            int64
	URL           string
	Events        []string
	Owner         string // admin list: the owner's email
	State         string // active, disabled, failing
	ByAdmin       bool   // disabled by an administrator (who alone enables it again)
	CreatedAt     time.Time
	FailingSince  *time.Time
	LastSuccessAt *time.Time
	Pending       int64
	Failed        int64
}

// OriginRow is one registered return origin.
type OriginRow struct {
	ID     int64
	Origin string
}
