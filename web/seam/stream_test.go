package seam_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/web/seam"
)

// lockedBuffer is a log sink the stream's goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStreamCSVFailures serves a three-page export over a real socket
// whose second page fails in each way: the client must see an error
// (never a shorter file that looks whole), the failure must be logged,
// and the server must go on answering (a panic on the stream's own
// goroutine would otherwise end the process).
func TestStreamCSVFailures(t *testing.T) {
	cases := []struct {
		name    string
		page    func(after int64) ([]int, int64, error)
		row     func(int) []string
		wantErr bool
		wantLog string
	}{
		{name: "whole", wantLog: ""},
		{name: "page error", wantErr: true, wantLog: "csv export stopped",
			page: func(after int64) ([]int, int64, error) {
				if after == 2 {
					return nil, 0, errors.New("database gone")
				}
				return []int{int(after) * 10}, after + 1, nil
			}},
		{name: "page panics", wantErr: true, wantLog: "csv export panicked",
			page: func(after int64) ([]int, int64, error) {
				if after == 2 {
					panic(fmt.Errorf("driver bug at cursor %d", after))
				}
				return []int{int(after) * 10}, after + 1, nil
			}},
		{name: "row panics", wantErr: true, wantLog: "csv export panicked",
			row: func(v int) []string {
				if v == 20 {
					panic("bad row")
				}
				return []string{fmt.Sprint(v)}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			log := slog.New(slog.NewTextHandler(logs, nil))
			page := tc.page
			if page == nil {
				page = func(after int64) ([]int, int64, error) {
					next := after + 1
					if after == 3 {
						next = 0
					}
					return []int{int(after) * 10}, next, nil
				}
			}
			row := tc.row
			if row == nil {
				row = func(v int) []string { return []string{fmt.Sprint(v)} }
			}
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			app.Get("/csv", func(c *fiber.Ctx) error {
				return seam.StreamCSV(c, log, seam.CSVExport[int]{
					Filename: "x.csv", Header: []string{"v"}, First: []int{0}, Next: 1,
					Page: page, Row: row, MaxRows: 100,
				})
			})
			app.Get("/ok", func(c *fiber.Ctx) error { return c.SendString("ok") })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = app.Listener(ln) }()
			defer func() { _ = app.Shutdown() }()
			base := "http://" + ln.Addr().String()

			// A failure may close the connection before the headers
			// left (the stream starts while they are written): then the
			// request itself fails, which is as good.
			var body []byte
			res, readErr := http.Get(base + "/csv")
			if readErr == nil {
				body, readErr = io.ReadAll(res.Body)
				_ = res.Body.Close()
				if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
					res.Header.Get("Cache-Control") != "no-store" || !strings.Contains(res.Header.Get("Content-Disposition"), `filename="x.csv"`) {
					t.Fatalf("answer %d %v", res.StatusCode, res.Header)
				}
			}
			if tc.wantErr {
				if readErr == nil {
					t.Fatalf("the cut file read as whole: %q", body)
				}
				if strings.Contains(string(body), "30") {
					t.Fatalf("rows after the failure were sent: %q", body)
				}
			} else if readErr != nil || string(body) != "\uFEFFv\n0\n10\n20\n30\n" {
				t.Fatalf("whole file: %q, %v", body, readErr)
			}
			if tc.wantLog == "" {
				if got := logs.String(); got != "" {
					t.Fatalf("a whole file logged %q", got)
				}
			} else if got := logs.String(); !strings.Contains(got, tc.wantLog) {
				t.Fatalf("log %q lacks %q", got, tc.wantLog)
			}
			// The server still answers.
			res, err = http.Get(base + "/ok")
			if err != nil {
				t.Fatalf("after the failure: %v", err)
			}
			b, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if string(b) != "ok" {
				t.Fatalf("after the failure: %q", b)
			}
		})
	}
}

// TestCSVCell: a cell that a spreadsheet would read as a formula is
// written after a quote; any other text is left as it is.
func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"order-1":           "order-1",
		"=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")",
		"+98912":            "'+98912",
		"-1":                "'-1",
		"@SUM(A1)":          "'@SUM(A1)",
		"\tcmd":             "'\tcmd",
		"\rcmd":             "'\rcmd",
		"سفارش =1":          "سفارش =1",
	} {
		if got := seam.CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStreamCSVCut: a file cut at MaxRows while rows remain ends with the
// Cut row, which names the last row written; a file that holds every row
// (MaxRows reached by the last one, or not reached) has no such row.
func TestStreamCSVCut(t *testing.T) {
	// Four pages of two rows: 0 1, 10 11, 20 21, 30 31.
	page := func(after int64) ([]int, int64, error) {
		next := after + 1
		if after == 3 {
			next = 0
		}
		return []int{int(after) * 10, int(after)*10 + 1}, next, nil
	}
	for _, tc := range []struct {
		max  int
		want string
	}{
		{3, "v\n0\n1\n10\ncut,after 10\n"},
		{4, "v\n0\n1\n10\n11\ncut,after 11\n"},
		{8, "v\n0\n1\n10\n11\n20\n21\n30\n31\n"},
		{100, "v\n0\n1\n10\n11\n20\n21\n30\n31\n"},
	} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			app.Get("/csv", func(c *fiber.Ctx) error {
				return seam.StreamCSV(c, slog.New(slog.DiscardHandler), seam.CSVExport[int]{
					Filename: "x.csv", Header: []string{"v"}, First: []int{0, 1}, Next: 1, Page: page, MaxRows: tc.max,
					Row: func(v int) []string { return []string{fmt.Sprint(v)} },
					Cut: func(last int) []string { return []string{"cut", fmt.Sprint("after ", last)} },
				})
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = app.Listener(ln) }()
			defer func() { _ = app.Shutdown() }()
			res, err := http.Get("http://" + ln.Addr().String() + "/csv")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if err != nil || string(body) != "\uFEFF"+tc.want {
				t.Fatalf("MaxRows %d: %q, %v; want %q", tc.max, body, err, tc.want)
			}
		})
	}
}
