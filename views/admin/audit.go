package admin

// AuditView is GET /admin/audit.
type AuditView struct {
	Admin, TopUp string // the filter, as typed
	Rows         []AuditRow
	NextURL      string
}
