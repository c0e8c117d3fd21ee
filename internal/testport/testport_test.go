package testport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestAddrIsBelowTheEphemeralRangeAndFree(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr := Addr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice while reserved", addr)
		}
		seen[addr] = true
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port < lowest || port >= ephemeralLow() {
			t.Fatalf("port %d outside %d–%d", port, lowest, ephemeralLow()-1)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		ln.Close()
	}
}

func TestAReservedPortIsNotReservedAgainUntilReleased(t *testing.T) {
	dir := t.TempDir()
	f, ok, err := reserve(dir, 25000)
	if err != nil || !ok {
		t.Fatalf("first reservation: ok %v, err %v", ok, err)
	}
	if _, ok, err := reserve(dir, 25000); err != nil || ok {
		t.Fatalf("second reservation while held: ok %v, err %v; want refused", ok, err)
	}
	f.Close()
	g, ok, err := reserve(dir, 25000)
	if err != nil || !ok {
		t.Fatalf("reservation after release: ok %v, err %v", ok, err)
	}
	g.Close()
	if _, err := os.Stat(filepath.Join(dir, "25000")); err != nil {
		t.Fatal(err)
	}
}
