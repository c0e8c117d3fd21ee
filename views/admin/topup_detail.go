package admin

import "time"

// TopUpDetailView is GET /admin/payments/{public_id}: the whole story.
type TopUpDetailView struct {
	Notice, NoticeKind string // message key of the last action's result; "ok" or "error"
	// OverBalanceLimit, when not 0, is the balance cap this payment's
	// credit took the wallet over (credited all the same: the bank had
	// the money).
	OverBalanceLimit int64
	PublicID         string
	Status           string
	Reason           string // in words
	AmountRials      int64
	VerifiedRials    int64
	Gateway          string
	Authority        string
	RefID            int64
	Card             string
	Attempts         int
	CreatedAt        time.Time
	ResolvedAt       *time.Time
	NextCheckAt      *time.Time
	LastCheckedAt    *time.Time
	CanRecheck       bool // "ask the bank now"
	CanClose         bool // "close as failed" (needs_review)
	Events           []TimelineEvent
	Calls            []GatewayCallView
	Ledger           *LedgerRow
	User             UserRow
	UserTopUps       []TopUpRow
	Actions          []AuditRow
	// CardRefunds is "refund to card" (nil: not shown).
	CardRefunds *CardRefundsView
}

// TimelineEvent is one status change of a payment.
type TimelineEvent struct {
	From, To    string
	Actor       string
	Reason      string // in words
	GatewayCode *int
	AdminEmail  string
	At          time.Time
}

// GatewayCallView is one recorded attempt at a gateway operation.
type GatewayCallView struct {
	Operation   string
	Attempt     int
	StartedAt   time.Time
	DurationMS  int64
	HTTPStatus  int
	GatewayCode int
	Outcome     string
}
