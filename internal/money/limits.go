package money

import (
	"errors"
	"fmt"
)

// The amount rules' refusals (besides ParseTomans's ErrEmpty, ErrInvalid,
// ErrTooLong and ErrNotPositive).
var (
	ErrNotWholeTomans = errors.New("amount is not whole tomans (a multiple of 10 rials)")
	ErrTooSmall       = errors.New("amount is below the minimum")
	ErrTooLarge       = errors.New("amount is above the maximum")
)

// Limits are the top-up amount rules: a positive number of whole tomans
// (we show tomans, so we take tomans) from MinRials to MaxRials. This is
// the one home of the rules: the web form, the API, the payment service
// and the configuration (TOPUP_MIN_RIALS, TOPUP_MAX_RIALS) all ask it.
type Limits struct {
	MinRials int64
	MaxRials int64
}

// Check applies the rules to an amount in rials, in a fixed order (so that
// every entry point refuses the same amount for the same reason):
// ErrNotPositive, ErrNotWholeTomans, ErrTooSmall, ErrTooLarge.
func (l Limits) Check(rials int64) error {
	switch {
	case rials <= 0:
		return ErrNotPositive
	case rials%RialsPerToman != 0:
		return ErrNotWholeTomans
	case rials < l.MinRials:
		return ErrTooSmall
	case rials > l.MaxRials:
		return ErrTooLarge
	}
	return nil
}

// ParseTomans reads an amount typed in tomans (any digits, separators;
// see the package function) and applies the rules to it.
func (l Limits) ParseTomans(s string) (int64, error) {
	rials, err := ParseTomans(s)
	if err != nil {
		return 0, err
	}
	return rials, l.Check(rials)
}

// LimitError is one problem with the limits themselves; Max says which
// bound it is about (the configuration names its variable).
type LimitError struct {
	Max bool
	Msg string
}

func (e *LimitError) Error() string { return e.Msg }

// Validate checks the limits themselves: whole tomans, a minimum of at
// least floorRials (the smallest amount the gateway takes), and a range
// that is not empty. Each problem is a *LimitError.
func (l Limits) Validate(floorRials int64) []*LimitError {
	var errs []*LimitError
	if l.MinRials < floorRials {
		errs = append(errs, &LimitError{Msg: fmt.Sprintf("must be at least %d (the gateway's minimum), got %d", floorRials, l.MinRials)})
	}
	if l.MinRials%RialsPerToman != 0 {
		errs = append(errs, &LimitError{Msg: "must be whole tomans (a multiple of 10 rials)"})
	}
	if l.MaxRials%RialsPerToman != 0 {
		errs = append(errs, &LimitError{Max: true, Msg: "must be whole tomans (a multiple of 10 rials)"})
	}
	if l.MaxRials < l.MinRials {
		errs = append(errs, &LimitError{Max: true, Msg: "must not be below the minimum"})
	}
	return errs
}
