// Package logging builds Kifpool's slog logger (LOG_LEVEL, LOG_FORMAT) and
// carries per-request attributes in the context: a handler adds the
// request id and the payment's public id, when the context holds them, to
// every line logged with that context.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Formats of the log output.
const (
	FormatJSON = "json"
	FormatText = "text"
)

// ParseLevel reads a LOG_LEVEL value: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("want debug, info, warn or error, got %q", s)
}

// ParseFormat reads a LOG_FORMAT value: json or text ("" gives def).
func ParseFormat(s, def string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return def, nil
	case FormatJSON, FormatText:
		return v, nil
	}
	return "", fmt.Errorf("want json or text, got %q", s)
}

// New returns a logger writing to w at level in format (json or text).
func New(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if format == FormatText {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(Wrap(h))
}

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyTopUp
)

// WithRequestID returns ctx carrying the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, keyRequestID, id)
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(keyRequestID).(string)
	return s
}

// WithTopUp returns ctx carrying the public id of the payment the work is
// about.
func WithTopUp(ctx context.Context, publicID string) context.Context {
	return context.WithValue(ctx, keyTopUp, publicID)
}

// TopUp returns the payment public id ctx carries, or "".
func TopUp(ctx context.Context) string {
	s, _ := ctx.Value(keyTopUp).(string)
	return s
}

// Wrap returns a handler that adds request_id and payment from the
// context of each record to h's output.
func Wrap(h slog.Handler) slog.Handler { return ctxHandler{h} }

type ctxHandler struct{ next slog.Handler }

func (h ctxHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" {
			r.AddAttrs(slog.String("request_id", id))
		}
		if p := TopUp(ctx); p != "" && !hasAttr(r, "payment") {
			r.AddAttrs(slog.String("payment", p))
		}
	}
	return h.next.Handle(ctx, r)
}

func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			found = true
			return false
		}
		return true
	})
	return found
}

func (h ctxHandler) WithAttrs(as []slog.Attr) slog.Handler { return ctxHandler{h.next.WithAttrs(as)} }

func (h ctxHandler) WithGroup(name string) slog.Handler { return ctxHandler{h.next.WithGroup(name)} }
