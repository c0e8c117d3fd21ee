package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ReconcileItem is one line of a reconciliation report.
type ReconcileItem struct {
	Authority   string `json:"authority"`
	AmountRials int64  `json:"amount_rials"`
	PublicID    string `json:"payment,omitempty"`
	// Kind: credited (ours, verified and credited now, even if it had
	// failed or needed review here), already_resolved (credited here yet
	// listed as unverified), foreign (not ours), amount_mismatch, open
	// (outcome still unknown), unresolved (the bank's verify did not say
	// paid; a person looks), error.
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// ReconcileReport is the stored result of one reconciliation.
type ReconcileReport struct {
	ID            int64 `gorm:"primaryKey"`
	Gateway       string
	StartedAt     time.Time
	FinishedAt    time.Time
	Listed        int
	Ours          int
	Credited      int
	CreditedRials int64
	ForeignCount  int
	ForeignRials  int64
	Mismatches    int
	Details       string // JSON array of ReconcileItem
	Error         string
}

// Items decodes the report's lines.
func (r ReconcileReport) Items() []ReconcileItem {
	var items []ReconcileItem
	_ = json.Unmarshal([]byte(r.Details), &items)
	return items
}

// Reconcile asks the gateway for payments it holds as paid but not
// verified (callbacks lost, windows closed), verifies and credits those
// that are ours through the one Resolve path, lists those that are not,
// and stores a report. It never touches a wallet for a foreign authority.
func (s *Service) Reconcile(ctx context.Context) (ReconcileReport, error) {
	rep := ReconcileReport{Gateway: s.gw.Name(), StartedAt: s.clock(), Details: "[]"}
	var items []ReconcileItem
	list, err := s.gw.ListUnverified(ctx)
	if err != nil {
		rep.Error = truncate("list unverified: "+err.Error(), 500)
	}
	rep.Listed = len(list)
	for _, u := range list {
		it := ReconcileItem{Authority: u.Authority, AmountRials: u.AmountRials}
		var p Payment
		err := s.db.Gorm.WithContext(ctx).Where("gateway = ? AND authority = ?", s.gw.Name(), u.Authority).Take(&p).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			it.Kind = "foreign"
			rep.ForeignCount++
			rep.ForeignRials += u.AmountRials
			items = append(items, it)
			continue
		case err != nil:
			it.Kind, it.Detail = "error", truncate(err.Error(), 200)
			items = append(items, it)
			continue
		}
		rep.Ours++
		it.PublicID = p.PublicID
		if u.AmountRials != p.AmountRials {
			it.Kind, it.Detail = "amount_mismatch", fmt.Sprintf("ours %d rials", p.AmountRials)
			rep.Mismatches++
		}
		before := p.Status
		switch p.Status {
		case StatusCredited:
			// Credited here but listed as unverified there: should not be.
			if it.Kind == "" {
				it.Kind, it.Detail = "already_resolved", string(p.Status)
			}
			rep.Mismatches++
		case StatusFailed, StatusNeedsReview:
			// The bank holds the payer's money for a payment that ended
			// without it here: verify it, and a paid answer credits it.
			p, err = s.recheck(ctx, p)
		default:
			p, err = s.Resolve(ctx, p)
		}
		switch {
		case before == StatusCredited:
		case err != nil:
			it.Kind, it.Detail = "error", truncate(err.Error(), 200)
		case p.Status == StatusCredited:
			if it.Kind == "" {
				it.Kind = "credited"
			}
			if before != StatusPendingVerification && before != StatusAwaitingPayment {
				it.Detail = "was " + string(before) + " here"
			}
			rep.Credited++
			rep.CreditedRials += p.AmountRials
		case it.Kind == "":
			it.Kind, it.Detail = "open", string(p.Status)
			if p.Status.Terminal() {
				it.Kind = "unresolved"
				rep.Mismatches++
			}
		}
		items = append(items, it)
	}
	rep.FinishedAt = s.clock()
	if b, err := json.Marshal(items); err == nil && items != nil {
		rep.Details = string(b)
	}
	if err := s.db.Gorm.WithContext(context.WithoutCancel(ctx)).Create(&rep).Error; err != nil {
		return rep, fmt.Errorf("store reconcile report: %w", err)
	}
	s.log.Info("reconciliation done", "listed", rep.Listed, "ours", rep.Ours, "credited", rep.Credited,
		"foreign", rep.ForeignCount, "mismatches", rep.Mismatches, "error", rep.Error)
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// LatestReconcileReports returns the newest reports first.
func (s *Service) LatestReconcileReports(ctx context.Context, limit int) ([]ReconcileReport, error) {
	var out []ReconcileReport
	err := s.db.Gorm.WithContext(ctx).Order("id DESC").Limit(limit).Find(&out).Error
	return out, err
}
