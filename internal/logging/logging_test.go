package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want slog.Level
		ok   bool
	}{{"debug", slog.LevelDebug, true}, {"", slog.LevelInfo, true}, {"WARN", slog.LevelWarn, true}, {"error", slog.LevelError, true}, {"loud", 0, false}} {
		got, err := ParseLevel(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseLevel(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct{ in, def, want string }{{"", "text", "text"}, {"JSON", "text", "json"}, {"text", "json", "text"}, {"xml", "json", ""}} {
		got, err := ParseFormat(tc.in, tc.def)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("ParseFormat(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestContextAttributes(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, slog.LevelInfo, FormatJSON).With("component", "test")
	ctx := WithTopUp(WithRequestID(context.Background(), "req-1"), "abc")
	log.InfoContext(ctx, "hello")
	log.InfoContext(ctx, "explicit", "payment", "other")
	log.Debug("hidden")
	log.Info("plain")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	var first, second, third map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	_ = json.Unmarshal([]byte(lines[2]), &third)
	if first["request_id"] != "req-1" || first["payment"] != "abc" || first["component"] != "test" {
		t.Fatalf("first line: %v", first)
	}
	if second["payment"] != "other" {
		t.Fatalf("an explicit payment attribute is kept: %v", second)
	}
	if _, ok := third["request_id"]; ok {
		t.Fatalf("no context, no request id: %v", third)
	}
	var text bytes.Buffer
	New(&text, slog.LevelDebug, FormatText).DebugContext(ctx, "dbg")
	if !strings.Contains(text.String(), "request_id=req-1") || !strings.Contains(text.String(), "level=DEBUG") {
		t.Fatalf("text: %s", text.String())
	}
}
