package zarinpal

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// Zarinpal's GraphQL API (next.zarinpal.com/api/v4/graphql/), as far as
// the card refund uses it: the AddRefund mutation and the Session query.
// Calls carry an access token (Authorization: Bearer …; the bank takes
// any), never the merchant id.
//
//	POST /api/v4/graphql/   AddRefund → fault key "refund"; Session → "sessions"
//
// A session is a Zarinpal payment: its id is the payment's creation
// number, its reference_id the ref_id verify gave. AddRefund refunds part
// or all of a verified session to the card (at least 20,000 rials, never
// more than what is left of it), and every refund is kept with the
// payment (book.Payment.Refunds): a session's timeline.refund_amount is
// its refunded total. A refused call answers HTTP 200 with GraphQL errors
// whose extensions' category is "validation" (401 "authentication"
// without a token).
const (
	opRefund   = "refund"   // the AddRefund mutation
	opSessions = "sessions" // the Session query

	// minRefundRials is the smallest refund AddRefund takes.
	minRefundRials = 20_000
	// graphQLURL is Zarinpal's GraphQL endpoint; the bank serves it at
	// its path (graphQLPath).
	graphQLURL = "https://next.zarinpal.com/api/v4/graphql/"
)

// graphQLPath is the GraphQL endpoint's path (taken from Zarinpal's URL,
// not written out: its first segment is also the app's /api).
var graphQLPath = func() string {
	u, err := url.Parse(graphQLURL)
	if err != nil {
		panic(err)
	}
	return u.Path
}()

// refundReasons and refundMethods are AddRefund's enums.
var (
	refundReasons = []string{"CUSTOMER_REQUEST", "DUPLICATE_TRANSACTION", "SUSPICIOUS_TRANSACTION", "OTHER"}
	refundMethods = []string{"PAYA", "CARD"}
)

// graphQLOp is the operation of a GraphQL call's body ("" for none the
// bank knows).
func graphQLOp(raw []byte) string {
	var in struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	switch {
	case strings.Contains(in.Query, "AddRefund("):
		return opRefund
	case strings.Contains(in.Query, "Session("):
		return opSessions
	}
	return ""
}

// graphQLRoutes registers the GraphQL endpoint: each call goes to its
// operation's handler, through the fault layer.
func (z *Zarinpal) graphQLRoutes(mux *http.ServeMux, op func(string) http.Handler) {
	serve := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeGraphQLErrors(w, http.StatusMethodNotAllowed, "validation", "use POST")
			return
		}
		raw, _ := io.ReadAll(io.LimitReader(r.Body, protocol.MaxBody+1))
		r.Body = io.NopCloser(bytes.NewReader(raw))
		o := graphQLOp(raw)
		if o == "" {
			writeGraphQLErrors(w, http.StatusBadRequest, "graphql", "this sandbox bank knows the AddRefund mutation and the Session query only")
			return
		}
		op(o).ServeHTTP(w, r)
	}
	mux.HandleFunc(graphQLPath, serve)
	mux.HandleFunc(strings.TrimSuffix(graphQLPath, "/"), serve)
}

type graphQLError struct {
	Message    string            `json:"message"`
	Extensions map[string]string `json:"extensions"`
}

// writeGraphQLErrors answers a refused call.
func writeGraphQLErrors(w http.ResponseWriter, status int, category string, msgs ...string) {
	errs := make([]graphQLError, 0, len(msgs))
	for _, m := range msgs {
		errs = append(errs, graphQLError{Message: m, Extensions: map[string]string{"category": category}})
	}
	protocol.WriteJSON(w, status, map[string]any{"data": nil, "errors": errs})
}

// graphQLCall reads a call's variables after checking its token; it
// answers the refusal itself and then reports false.
func graphQLCall(w http.ResponseWriter, r *http.Request, vars any) bool {
	auth := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(auth, "Bearer "); !ok || strings.TrimSpace(tok) == "" {
		writeGraphQLErrors(w, http.StatusUnauthorized, "authentication", "Unauthenticated.")
		return false
	}
	var in struct {
		Query     string          `json:"query"`
		Variables json.RawMessage `json:"variables"`
	}
	if err := protocol.DecodeBody(w, r, &in); err != nil {
		writeGraphQLErrors(w, http.StatusBadRequest, "graphql", "the body must be a JSON object: "+err.Error())
		return false
	}
	if len(in.Variables) == 0 || string(in.Variables) == "null" {
		in.Variables = json.RawMessage("{}")
	}
	if err := json.Unmarshal(in.Variables, vars); err != nil {
		writeGraphQLErrors(w, http.StatusOK, "validation", "variables: "+err.Error())
		return false
	}
	return true
}

// sessionView is a Session as the API shows it (and AddRefund's resource).
type sessionView struct {
	TerminalID  string       `json:"terminal_id"`
	ID          string       `json:"id"`
	Status      string       `json:"status"`
	Amount      int64        `json:"amount"`
	Description string       `json:"description"`
	CreatedAt   string       `json:"created_at"`
	Timeline    timelineView `json:"timeline"`
}

type timelineView struct {
	RefundAmount int64  `json:"refund_amount"`
	RefundTime   string `json:"refund_time,omitempty"`
	RefundStatus string `json:"refund_status,omitempty"`
}

// sessionOf is a payment as a Session (under the book's lock).
func (z *Zarinpal) sessionOf(rec *book.Record, terminal string) sessionView {
	tehran := z.env.Book.Tehran()
	v := sessionView{TerminalID: terminal, ID: strconv.FormatUint(rec.Seq, 10), Status: string(rec.State), Amount: rec.Amount,
		Description: rec.Description, CreatedAt: rec.CreatedAt.In(tehran).Format(tehranDateLayout),
		Timeline: timelineView{RefundAmount: rec.RefundedAmount}}
	if n := len(rec.Refunds); n > 0 {
		last := rec.Refunds[n-1]
		v.Status = "REFUNDED"
		v.Timeline.RefundTime = last.At.In(tehran).Format(tehranDateLayout)
		v.Timeline.RefundStatus = refundStatus(last.Method)
	}
	return v
}

// refundStatus is a refund's progress: to the card at once, by Paya in
// the next cycle.
func refundStatus(method string) string {
	if method == "CARD" {
		return "DONE"
	}
	return "PENDING"
}

// apiSessions serves the Session query: the zarinpal payments matching
// the filters, newest first.
func (z *Zarinpal) apiSessions(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TerminalID  json.RawMessage `json:"terminal_id"`
		ID          json.RawMessage `json:"id"`
		ReferenceID json.RawMessage `json:"reference_id"`
		Filter      string          `json:"filter"`
		Limit       *int            `json:"limit"`
		Offset      int             `json:"offset"`
	}
	if !graphQLCall(w, r, &in) {
		return
	}
	terminal := protocol.RawString(in.TerminalID)
	if !protocol.Digits(terminal) {
		writeGraphQLErrors(w, http.StatusOK, "validation", "The terminal id field is required.")
		return
	}
	limit := 25
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > 100 || in.Offset < 0 {
		writeGraphQLErrors(w, http.StatusOK, "validation", "limit must be 1 to 100, offset at least 0")
		return
	}
	id, ref := protocol.RawString(in.ID), protocol.RawString(in.ReferenceID)
	bk := z.env.Book
	bk.Lock()
	now := bk.Now()
	var recs []*book.Record
	bk.EachLocked(func(rec *book.Record) {
		if rec.Gateway != Gateway {
			return
		}
		bk.ExpireLocked(rec, now)
		switch {
		case id != "" && id != strconv.FormatUint(rec.Seq, 10):
		case ref != "" && (rec.RefID == 0 || ref != strconv.FormatInt(rec.RefID, 10)):
		case !matchesFilter(rec, in.Filter):
		default:
			recs = append(recs, rec)
		}
	})
	slices.SortFunc(recs, func(a, b *book.Record) int { return cmp.Compare(b.Seq, a.Seq) })
	out := make([]sessionView, 0, limit)
	for i, rec := range recs {
		if i < in.Offset {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, z.sessionOf(rec, terminal))
	}
	bk.Unlock()
	protocol.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"Session": out}})
}

// matchesFilter is the Session query's filter: PAID, VERIFIED, TRASH
// (not paid), ACTIVE (on the bank's page), REFUNDED; "" for all.
func matchesFilter(rec *book.Record, filter string) bool {
	switch filter {
	case "":
		return true
	case "PAID":
		return rec.State == book.StatePaid
	case "VERIFIED":
		return rec.State == book.StateVerified
	case "TRASH":
		return rec.State == book.StateFailed || rec.State == book.StateReversed
	case "ACTIVE":
		return rec.State == book.StateInBank
	case "REFUNDED":
		return len(rec.Refunds) > 0
	}
	return false
}

// apiRefund serves the AddRefund mutation: a refund of part or all of a
// verified session to the card, answered with the session as refunded.
func (z *Zarinpal) apiRefund(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SessionID   json.RawMessage `json:"session_id"`
		Amount      json.RawMessage `json:"amount"`
		Description string          `json:"description"`
		Method      string          `json:"method"`
		Reason      string          `json:"reason"`
	}
	if !graphQLCall(w, r, &in) {
		return
	}
	var probs []string
	amount, present, ok := protocol.Amount(in.Amount)
	switch {
	case !present || !ok:
		probs = append(probs, "The amount must be an integer (rials).")
	case amount < minRefundRials:
		probs = append(probs, fmt.Sprintf("The amount must be at least %d rials.", minRefundRials))
	}
	if in.Method == "" {
		in.Method = "PAYA"
	}
	if !slices.Contains(refundMethods, in.Method) {
		probs = append(probs, "The method must be PAYA or CARD.")
	}
	if in.Reason == "" {
		in.Reason = "CUSTOMER_REQUEST"
	}
	if !slices.Contains(refundReasons, in.Reason) {
		probs = append(probs, "The reason is invalid.")
	}
	if strings.TrimSpace(in.Description) == "" {
		probs = append(probs, "The description field is required.")
	}
	session := protocol.RawString(in.SessionID)
	if session == "" {
		probs = append(probs, "The session id field is required.")
	}
	if len(probs) > 0 {
		writeGraphQLErrors(w, http.StatusOK, "validation", probs...)
		return
	}
	bk := z.env.Book
	bk.Lock()
	defer bk.Unlock()
	var rec *book.Record
	bk.EachLocked(func(x *book.Record) {
		if x.Gateway == Gateway && strconv.FormatUint(x.Seq, 10) == session {
			rec = x
		}
	})
	now := bk.Now()
	if rec != nil {
		bk.ExpireLocked(rec, now)
	}
	switch {
	case rec == nil:
		writeGraphQLErrors(w, http.StatusOK, "validation", "Session not found.")
		return
	case rec.State != book.StateVerified:
		writeGraphQLErrors(w, http.StatusOK, "validation", "Session is not verified: only a verified payment is refunded.")
		return
	case amount > rec.Amount-rec.RefundedAmount:
		writeGraphQLErrors(w, http.StatusOK, "validation",
			fmt.Sprintf("The amount is more than is left to refund of this session (%d rials).", rec.Amount-rec.RefundedAmount))
		return
	}
	id, err := bk.NewTokenLocked("", 12)
	if err != nil {
		writeGraphQLErrors(w, http.StatusInternalServerError, "internal", "sandbank: "+err.Error())
		return
	}
	rec.Refunds = append(rec.Refunds, book.Refund{ID: id, Amount: amount, Method: in.Method, Reason: in.Reason,
		Description: in.Description, At: now})
	rec.RefundedAmount += amount
	z.env.Log.Info("sandbank: zarinpal refund", "authority", rec.Authority, "amount", amount, "refunded", rec.RefundedAmount)
	protocol.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"resource": z.sessionOf(rec, "1")}})
}

// refundCommitted reports whether an AddRefund answer refunded (its
// resource is there, no errors): commit-then-hang withholds it.
func refundCommitted(body []byte) bool {
	var a struct {
		Data struct {
			Resource json.RawMessage `json:"resource"`
		} `json:"data"`
		Errors []json.RawMessage `json:"errors"`
	}
	return json.Unmarshal(body, &a) == nil && len(a.Errors) == 0 && bytes.HasPrefix(a.Data.Resource, []byte("{"))
}
