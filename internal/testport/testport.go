// Package testport hands tests a loopback address for a server they start
// in a child process, on a port nothing else will take while the test
// runs.
//
// The usual way, listening on port 0 and closing the listener, hands out a
// port from the kernel's ephemeral range, and the kernel hands the same
// port to the next listener on port 0 or to an outgoing connection: a test
// package running in parallel (the browser suite's app) may then answer on
// the address before the child has bound it, and the test talks to the
// wrong server. Addr picks from below the ephemeral range, where the kernel
// assigns nothing, and reserves the port for the test with an advisory
// lock on a file that every test process on the machine sees: two test
// processes never hold the same port, and the kernel drops the lock of a
// process that dies, so nothing stale is left behind.
package testport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// lowest is the lowest port Addr picks; below it are the well-known and
// the usual fixed ports of services (PostgreSQL's 5432, SMTP test servers'
// ports).
const lowest = 20000

// tries bounds the random picks before Addr gives up.
const tries = 200

// Addr returns "127.0.0.1:PORT", with PORT free when picked and reserved
// for t until its cleanup: no other caller of Addr, in this process or
// another, is given it meanwhile, and the kernel does not assign it. A
// child process restarted on the address finds it still free.
func Addr(t testing.TB) string {
	t.Helper()
	highest := ephemeralLow() - 1
	// One folder per user: the test processes of one user share it.
	dir := filepath.Join(os.TempDir(), "kifpool-testport-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("testport: %v", err)
	}
	for range tries {
		port := lowest + rand.IntN(highest-lowest+1) // #nosec G404 -- spreads picks over the range, guards nothing
		f, ok, err := reserve(dir, port)
		if err != nil {
			t.Fatalf("testport: %v", err)
		}
		if !ok {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			// A process outside the tests holds it.
			_ = f.Close()
			continue
		}
		_ = ln.Close()
		t.Cleanup(func() { _ = f.Close() })
		return addr
	}
	t.Fatalf("testport: no free port in %d–%d after %d tries", lowest, highest, tries)
	return ""
}

// Port is Addr's port, for a server that takes a port alone (a
// PostgreSQL cluster's -p).
func Port(t testing.TB) int {
	t.Helper()
	_, p, err := net.SplitHostPort(Addr(t))
	if err != nil {
		t.Fatalf("testport: %v", err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("testport: %v", err)
	}
	return port
}

// reserve takes the advisory lock of port's file without waiting: ok is
// false when another holder has it. Closing f releases it.
func reserve(dir string, port int) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o600) // #nosec G304 -- a port number under our own folder
	if err != nil {
		return nil, false, fmt.Errorf("reserve port %d: %w", port, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reserve port %d: %w", port, err)
	}
	return f, true, nil
}

// ephemeralLow is the lowest port of the kernel's ephemeral range
// (Linux's default 32768 when it cannot be read, or when it leaves too
// little room below it).
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(b))
	if len(fields) < 1 {
		return fallback
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low < lowest+1000 {
		return fallback
	}
	return low
}
