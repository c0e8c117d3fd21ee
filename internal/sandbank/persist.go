package sandbank

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
)

// stateVersion is the state file's format.
const stateVersion = 1

// savedRecord is a record as the state file keeps it: the payment and what
// only the bank knows of it.
type savedRecord struct {
	Payment
	Seq          uint64 `json:"seq"`
	ReqAmount    int64  `json:"req_amount"`
	CardNumber   string `json:"card_number"`
	StartReferer string `json:"start_referer,omitempty"`
	TraceNo      string `json:"trace_no,omitempty"`
	User         string `json:"user,omitempty"`
	Pass         string `json:"pass,omitempty"`
}

type savedState struct {
	Version  int           `json:"version"`
	Payments []savedRecord `json:"payments"`
	// Payouts are the payout provider's (absent in files written before
	// it existed).
	Payouts *payouts.Saved `json:"payouts,omitempty"`
}

// Open is New with Options.StateFile: the bank starts with the payments the
// file holds (none when it does not exist yet) and writes them back there
// after every request it serves and every Go method that changes one, so
// that a restart of its process keeps its open payments (the bank inside
// `serve` keeps them under DATA_DIR). A file it cannot read is an error:
// starting empty would orphan every payment it held.
func Open(opts Options) (*Bank, error) {
	b := New(opts)
	if opts.StateFile == "" {
		return b, nil
	}
	b.stateFile = opts.StateFile
	if err := os.MkdirAll(filepath.Dir(b.stateFile), 0o700); err != nil {
		return nil, fmt.Errorf("sandbank state: %w", err)
	}
	if err := b.load(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Bank) load() error {
	raw, err := os.ReadFile(b.stateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbank state: %w", err)
	}
	var st savedState
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("sandbank state %s: %w", b.stateFile, err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("sandbank state %s: version %d, this build reads %d", b.stateFile, st.Version, stateVersion)
	}
	recs := make([]book.Record, 0, len(st.Payments))
	for _, s := range st.Payments {
		recs = append(recs, book.Record{Payment: s.Payment, Seq: s.Seq, ReqAmount: s.ReqAmount, CardNumber: s.CardNumber,
			StartReferer: s.StartReferer, TraceNo: s.TraceNo, User: s.User, Pass: s.Pass})
	}
	b.book.Restore(recs)
	if st.Payouts != nil {
		b.payouts.Restore(*st.Payouts)
	}
	b.saved = raw
	b.log.Info("sandbank: state restored", "file", b.stateFile, "payments", len(st.Payments))
	return nil
}

// save writes the payments to the state file when they changed since the
// last write: a new file beside it, then renamed over it (a crash leaves
// the old state or the new one, never half of one), private to this user.
func (b *Bank) save() error {
	if b.stateFile == "" {
		return nil
	}
	b.saveMu.Lock()
	defer b.saveMu.Unlock()
	recs := b.book.Records()
	st := savedState{Version: stateVersion, Payments: make([]savedRecord, 0, len(recs))}
	for _, rec := range recs {
		st.Payments = append(st.Payments, savedRecord{Payment: rec.Payment, Seq: rec.Seq, ReqAmount: rec.ReqAmount,
			CardNumber: rec.CardNumber, StartReferer: rec.StartReferer, TraceNo: rec.TraceNo, User: rec.User, Pass: rec.Pass})
	}
	sort.Slice(st.Payments, func(i, j int) bool { return st.Payments[i].Seq < st.Payments[j].Seq })
	if po := b.payouts.Save(); len(po.Payouts) > 0 {
		st.Payouts = &po
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("sandbank state: %w", err)
	}
	if bytes.Equal(raw, b.saved) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.stateFile), filepath.Base(b.stateFile)+".*.tmp")
	if err != nil {
		return fmt.Errorf("sandbank state: %w", err)
	}
	defer os.Remove(tmp.Name()) // #nosec G104 -- gone after the rename; only a failed write leaves it
	if _, err := tmp.Write(raw); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sandbank state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sandbank state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sandbank state: %w", err)
	}
	if err := os.Rename(tmp.Name(), b.stateFile); err != nil {
		return fmt.Errorf("sandbank state: %w", err)
	}
	b.saved = raw
	return nil
}

// saveLogged is save for callers that cannot return its error: the
// payment changed in memory all the same, and the next change writes it.
func (b *Bank) saveLogged() {
	if err := b.save(); err != nil {
		b.log.Error("sandbank: state not written", "file", b.stateFile, "err", err)
	}
}

// persisting writes the state after every request h serves.
func (b *Bank) persisting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		b.saveLogged()
	})
}
