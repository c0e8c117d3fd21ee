package admin

// FilterCount is how many payments of a status the current filter finds
// (More: more than N).
type FilterCount struct {
	Status  string
	N       int64
	More    bool
	Checked bool
}

// TopUpListView is GET /admin/payments.
type TopUpListView struct {
	Query    string
	Gateway  string
	From, To string // as typed (Jalali)
	Min, Max string // tomans, as typed
	Sort     string // "newest" or "oldest"
	ErrorKey string // message key of a bad filter
	Counts   []FilterCount
	Gateways []Option
	Rows     []TopUpRow
	// NextURL is the next page (""): the last); FirstURL the first page
	// when this is not it.
	NextURL, FirstURL string
	CSVURL            string
}
