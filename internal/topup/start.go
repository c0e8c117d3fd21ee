package topup

// The start use case (StartService): the one entry point through which
// the web form and the JSON API start a top-up. Handlers parse their
// request, call Start and render its answer; the amount rules
// (money.Limits), the order of the checks and the breaker refusal live
// here once.

import (
	"context"
	"errors"

	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/wallet"
)

// Starter is the top-up start use case as its callers (the web form, the
// API) see it. *StartService implements it; tests may wrap it.
type Starter interface {
	// Limits are the amount rules (for the form's hints and the API's
	// messages).
	Limits() money.Limits
	// Amount applies the rules to an amount as its caller received it:
	// the rials it stands for, or the rule it breaks (money's errors).
	Amount(a Amount) (int64, error)
	// Start starts a top-up, or answers a repeat of the same form or key
	// as its first submit was.
	Start(ctx context.Context, r Request) (StartResult, error)
	// Submitted reports whether the user already submitted the form with
	// this token (a repeat is answered from the first submit; the form's
	// rate limit does not count it).
	Submitted(ctx context.Context, userID int64, formToken string) (bool, error)
}

// Amount is an amount as a caller received it: typed by a person in
// tomans (any digits and separators), or given by a program in rials.
type Amount struct {
	typed   string
	rials   int64
	isTyped bool
}

// Typed is an amount a person typed, in tomans.
func Typed(tomans string) Amount { return Amount{typed: tomans, isTyped: true} }

// Rials is an amount a program sent, in rials.
func Rials(n int64) Amount { return Amount{rials: n} }

// Request is one submit of a top-up.
type Request struct {
	UserID int64
	Email  string
	// FormToken makes the submit idempotent: the form's hidden token, or
	// the API's, derived from its Idempotency-Key.
	FormToken string
	Amount    Amount
	// Description, when set, is shown by the bank after ours (the API's
	// optional description).
	Description string
	// English: the payer reads English (the web form in English); the
	// bank shows our description in their language.
	English bool
	// Gateway is the payer's choice of gateway (a driver's name; "": the
	// first offered). When its breaker is open the next healthy one is
	// used; the answer's payment names the one used.
	Gateway string
	// ReturnURL: where the payer goes after the bank (the API's
	// return_url, its origin already checked); "" for Kifpool's page.
	ReturnURL string
}

// Policy is a payer's limits beyond the amount rules (daily caps, the
// balance cap): Allow refuses a new top-up of rials that would break one
// (an early read, before the wallet and the payment are touched); Quota
// is the same check made again in the transaction that inserts the
// payment, under a lock of the payer's wallet row, so that it holds under
// concurrent starts (nil: no limit is on).
type Policy interface {
	Allow(ctx context.Context, userID, rials int64) error
	Quota(rials int64) *Quota
}

// StartService is the top-up start use case over the top-up and wallet
// services.
type StartService struct {
	topUps  *Service
	wallets *wallet.Service
	limits  money.Limits
	policy  Policy
}

// WithPolicy makes Start ask p before it writes anything (nil: no policy).
func (s *StartService) WithPolicy(p Policy) *StartService {
	s.policy = p
	return s
}

var _ Starter = (*StartService)(nil)

// NewStartService returns the use case with its amount rules.
func NewStartService(topUps *Service, wallets *wallet.Service, limits money.Limits) *StartService {
	return &StartService{topUps: topUps, wallets: wallets, limits: limits}
}

// Limits returns the amount rules.
func (s *StartService) Limits() money.Limits { return s.limits }

// Amount applies the amount rules.
func (s *StartService) Amount(a Amount) (int64, error) {
	if a.isTyped {
		return s.limits.ParseTomans(a.typed)
	}
	return a.rials, s.limits.Check(a.rials)
}

// Start checks, in this order and before writing anything: the form
// token's shape (ErrBadFormToken), the amount (money's errors),
// the gateway (ErrUnknownGateway for one not offered;
// ErrGatewayFailed with no payment when every offered gateway's
// breaker is open: a new top-up is refused before any other read; a
// repeat of a submitted form is not refused; the preferred gateway down,
// the next healthy one is used), the policy's limits for a new form (its error, e.g. a
// *limits.Exceeded); then it finds the user's wallet and starts the payment. A
// repeat of the token gets the first submit's answer, another amount on it
// a *FormReusedError.
func (s *StartService) Start(ctx context.Context, r Request) (StartResult, error) {
	if !ValidFormToken(r.FormToken) {
		return StartResult{}, ErrBadFormToken
	}
	rials, err := s.Amount(r.Amount)
	if err != nil {
		return StartResult{}, err
	}
	gw, err := s.topUps.CheckGateway(ctx, r.UserID, r.FormToken, r.Gateway)
	if err != nil {
		return StartResult{}, err
	}
	var quota *Quota
	if s.policy != nil {
		// A repeat of a submitted form is answered as its first submit
		// was: it is already counted, so it is never refused by a limit.
		seen, err := s.topUps.FormSubmitted(ctx, r.UserID, r.FormToken)
		if err != nil {
			return StartResult{}, err
		}
		if !seen {
			if err := s.policy.Allow(ctx, r.UserID, rials); err != nil {
				// A double click's twin may have inserted this form's
				// payment between the two reads, and counted it: then
				// this is a repeat, answered as that submit was.
				if again, ferr := s.topUps.FormSubmitted(ctx, r.UserID, r.FormToken); ferr != nil || !again {
					return StartResult{}, err
				}
			} else {
				quota = s.policy.Quota(rials)
			}
		}
	}
	// A user without a wallet yet (made before wallets were) gets it now:
	// the top-up credits it.
	w, err := s.wallets.Ensure(ctx, r.UserID, s.topUps.clock())
	if err != nil {
		return StartResult{}, errors.Join(ErrNoWallet, err)
	}
	return s.topUps.StartTopUp(ctx, StartInput{
		UserID: r.UserID, WalletID: w.ID, Email: r.Email, FormToken: r.FormToken,
		AmountRials: rials, Description: r.Description, English: r.English, Quota: quota, Gateway: gw, ReturnURL: r.ReturnURL,
	})
}

// Submitted reports whether the form with this token was submitted
// before (one indexed read; false for a malformed token).
func (s *StartService) Submitted(ctx context.Context, userID int64, formToken string) (bool, error) {
	return s.topUps.FormSubmitted(ctx, userID, formToken)
}

// ErrNoWallet: the user's wallet could not be read; nothing was written,
// the caller may retry (the API forgets the key).
var ErrNoWallet = errors.New("top-up: the wallet could not be read")
