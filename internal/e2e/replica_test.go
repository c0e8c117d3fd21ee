package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/testport"
	"github.com/kifpool/kifpool/internal/testwait"
)

// TestStreamingReplica runs serve on a real primary and a real streaming
// replica of it (initdb, pg_basebackup -R, two postmasters on their own
// ports in a temporary folder), with DATABASE_READ_URL on the replica. A
// credit written on the primary appears on the admin's top-up list once
// replayed; the dashboard shows the replica as a standby with its lag.
// Then the replica stops: the dashboard says so, and the lists read the
// primary (a later credit is listed at once).
//
// It needs PostgreSQL's server tools (initdb, pg_ctl, pg_basebackup of
// /usr/lib/postgresql/*/bin); without them it is skipped, unless
// REQUIRE_POSTGRES=1 or REQUIRE_DEPLOY_TOOLS=1 (CI) makes that a failure.
// Run as root, the postmasters run as the postgres user (runuser).
func TestStreamingReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two PostgreSQL servers; make test runs it")
	}
	pg := newPGTools(t)
	dir := pg.tempDir(t)
	primaryPort, replicaPort := testport.Port(t), testport.Port(t)
	primary, replica := filepath.Join(dir, "primary"), filepath.Join(dir, "replica")

	pg.run(t, "initdb", "-D", primary, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	pg.appendConf(t, primary, primaryPort, dir)
	pg.ctl(t, primary, "start")
	t.Cleanup(func() { pg.ctlQuiet(primary, "stop") })
	primaryURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/kifpool?sslmode=disable", primaryPort)
	admin := openDB(t, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", primaryPort))
	if err := admin.Gorm.Exec(`CREATE DATABASE kifpool`).Error; err != nil {
		t.Fatal(err)
	}

	pg.run(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primaryPort), "-U", "postgres",
		"-D", replica, "-R", "-X", "stream", "--no-sync")
	pg.appendConf(t, replica, replicaPort, dir)
	pg.ctl(t, replica, "start")
	t.Cleanup(func() { pg.ctlQuiet(replica, "stop") })
	replicaURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/kifpool?sslmode=disable", replicaPort)

	_, bankURL := startBank(t)
	srv, appURL := newServe(t, "serve", primaryURL, bankURL, map[string]string{
		"DATABASE_READ_URL": replicaURL, "DATABASE_READ_MAX_LAG": "1s", "WORKER_INTERVAL": "200ms",
	})
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, primaryURL)
	rig := &crashRig{srv: srv, appURL: appURL, bankURL: bankURL, bank: newBankClient(bankURL), db: db}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	payer := signedUp(ctx, t, appURL, "replica-payer@e2e.example")
	boss, _ := signedInAdmin(ctx, t, rig, "replica-boss@e2e.example")

	p := topUpCredited(ctx, t, rig, payer, "zarinpal", 5000)
	listed := func(publicID string) bool {
		r, err := boss.do(ctx, http.MethodGet, routes.AdminTopUps, nil)
		return err == nil && r.status == http.StatusOK && strings.Contains(r.body, routes.AdminTopUp(publicID))
	}
	credited := time.Now()
	testwait.Eventually(t, 20*time.Second, "the credit to reach the admin's list through the replica", func() bool { return listed(p.PublicID) })
	t.Logf("the credit reached the admin's list through the replica %v after the payer's receipt", time.Since(credited).Round(time.Millisecond))

	replicaRE := regexp.MustCompile(`data-testid="read-replica" data-state="([a-z_]+)" data-lag-ms="(\d+)"`)
	r, err := boss.do(ctx, http.MethodGet, routes.Admin, nil)
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("dashboard: %d %v", r.status, err)
	}
	m := replicaRE.FindStringSubmatch(r.body)
	if m == nil || (m[1] != "caught_up" && m[1] != "lag") {
		t.Fatalf("dashboard: the replica not shown as a standby (%v)", m)
	}
	t.Logf("replica on the dashboard: %s, %s ms behind", m[1], m[2])

	// The replica's replay paused: WAL waits, its data ages past
	// DATABASE_READ_MAX_LAG, and the pages read the primary (a new credit
	// is listed) until it replays again.
	rdb := openDB(t, replicaURL)
	if err := rdb.Gorm.Exec(`SELECT pg_wal_replay_pause()`).Error; err != nil {
		t.Fatal(err)
	}
	paused := topUpCredited(ctx, t, rig, payer, "zarinpal", 5500)
	state := func() string {
		r, err := boss.do(ctx, http.MethodGet, routes.Admin, nil)
		if err != nil || r.status != http.StatusOK {
			return ""
		}
		if m := replicaRE.FindStringSubmatch(r.body); m != nil {
			return m[1]
		}
		return ""
	}
	testwait.Eventually(t, 20*time.Second, "the dashboard to say the replica is behind", func() bool { return state() == "behind" })
	if !listed(paused.PublicID) {
		t.Fatal("a credit made while the replica's replay is paused is missing from the admin's list: no fallback past DATABASE_READ_MAX_LAG")
	}
	if n := srv.logCount("is further behind than DATABASE_READ_MAX_LAG"); n == 0 {
		t.Error("no warning in serve's log that the replica is too far behind")
	}
	if err := rdb.Gorm.Exec(`SELECT pg_wal_replay_resume()`).Error; err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 20*time.Second, "the replica to be read again once it replayed", func() bool {
		s := state()
		return s == "caught_up" || s == "lag"
	})

	// The replica stops: the pages read the primary.
	pg.ctl(t, replica, "stop")
	r, err = boss.do(ctx, http.MethodGet, routes.Admin, nil)
	if m = replicaRE.FindStringSubmatch(r.body); err != nil || m == nil || m[1] != "down" {
		t.Fatalf("dashboard with the replica stopped: %d %v %v", r.status, err, m)
	}
	p2 := topUpCredited(ctx, t, rig, payer, "zarinpal", 6000)
	if !listed(p2.PublicID) {
		t.Fatal("a credit while the replica is down is missing from the admin's list: no fallback to the primary")
	}
	if n := srv.logCount("the read database (DATABASE_READ_URL) does not answer"); n == 0 {
		t.Error("no warning in serve's log that the replica does not answer")
	}
}

// pgTools runs PostgreSQL's server programs, as the postgres user when
// the test runs as root (initdb refuses root).
type pgTools struct {
	bin string
	as  *user.User // nil: the test's own user
}

func newPGTools(t *testing.T) pgTools {
	t.Helper()
	required := os.Getenv("REQUIRE_POSTGRES") == "1" || os.Getenv("REQUIRE_DEPLOY_TOOLS") == "1"
	missing := func(why string) {
		if required {
			t.Fatalf("REQUIRE_POSTGRES=1 or REQUIRE_DEPLOY_TOOLS=1, but %s (apt-get install -y postgresql)", why)
		}
		t.Skipf("%s (apt-get install -y postgresql); CI runs this test", why)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_basebackup")
	var bin string
	for _, f := range found {
		d := filepath.Dir(f)
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			bin = d // the newest version sorts last
		}
	}
	if bin == "" {
		missing("PostgreSQL's server tools (initdb, pg_ctl, pg_basebackup) are not installed")
	}
	pt := pgTools{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			missing("running as root, and there is no postgres user to run PostgreSQL as")
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			missing("running as root, and runuser is missing")
		}
		pt.as = u
	}
	return pt
}

// tempDir is a folder the postmasters' user owns (t.TempDir's parent is
// the test user's alone), removed at the end.
func (pg pgTools) tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kifpool-replica-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if pg.as != nil {
		uid, _ := strconv.Atoi(pg.as.Uid)
		gid, _ := strconv.Atoi(pg.as.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func (pg pgTools) command(name string, args ...string) *exec.Cmd {
	prog := filepath.Join(pg.bin, name)
	if pg.as != nil {
		return exec.Command("runuser", append([]string{"-u", pg.as.Username, "--", prog}, args...)...) // #nosec G204 -- the test's own programs and arguments
	}
	return exec.Command(prog, args...) // #nosec G204 -- the test's own programs and arguments
}

func (pg pgTools) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := pg.command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func (pg pgTools) ctl(t *testing.T, data, action string) {
	t.Helper()
	pg.run(t, "pg_ctl", "-D", data, "-l", data+".log", "-w", "-t", "30", "-m", "fast", action)
}

func (pg pgTools) ctlQuiet(data, action string) {
	_ = pg.command("pg_ctl", "-D", data, "-w", "-t", "30", "-m", "immediate", action).Run()
}

// appendConf makes a cluster listen on 127.0.0.1:port only, its socket in
// dir, and skip what durability costs (a test's throwaway data).
func (pg pgTools) appendConf(t *testing.T, data string, port int, dir string) {
	t.Helper()
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 60\n", port, dir)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0) // #nosec G304 -- the test's own cluster
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(conf); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
