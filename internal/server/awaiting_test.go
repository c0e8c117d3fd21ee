package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/metrics"
)

// TestAwaitingAdminKeepsWhatItRead: one kind's source failing leaves its
// series out and says why; the other kinds are still reported, and a kind
// that is off reports none waiting.
func TestAwaitingAdminKeepsWhatItRead(t *testing.T) {
	since := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	sources := []func(context.Context) (int64, time.Time, error){
		func(context.Context) (int64, time.Time, error) { return 2, since, nil },
		func(context.Context) (int64, time.Time, error) { return 0, time.Time{}, errors.New("database down") },
		nil,
	}
	got, err := awaitingAdmin(context.Background(), sources)
	if err == nil {
		t.Error("the failing source's error is lost")
	}
	want := []metrics.Awaiting{{Kind: "withdrawal", Count: 2, Oldest: since}, {Kind: "card_refund"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("kind %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
