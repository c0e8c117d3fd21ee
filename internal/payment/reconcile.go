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
	// Kind: credited (ours, verified and credited now), already_resolved,
	// foreign (not ours), failed_here (paid at the bank but failed here: the
	// bank returns it unless a person acts), amount_mismatch, open (still
	// not resolved), error.
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
		switch p.Status {
		case StatusFailed:
			it.Kind, it.Detail = "failed_here", "paid at the bank after it failed here; unverified, so the bank returns it"
			rep.Mismatches++
		case StatusCredited, StatusNeedsReview:
			if it.Kind == "" {
				it.Kind = "already_resolved"
				it.Detail = string(p.Status)
				rep.Mismatches++
			}
		default:
			before := p.Status
			p, err = s.Resolve(ctx, p)
			switch {
			case err != nil:
				it.Kind, it.Detail = "error", truncate(err.Error(), 200)
			case p.Status == StatusCredited && before != StatusCredited:
				if it.Kind == "" {
					it.Kind = "credited"
				}
				rep.Credited++
				rep.CreditedRials += p.AmountRials
			case it.Kind == "":
				it.Kind, it.Detail = "open", string(p.Status)
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
