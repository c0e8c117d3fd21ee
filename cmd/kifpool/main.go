// Command kifpool is the Kifpool wallet app: one binary with subcommands.
//
//	kifpool serve                       run the web app (migrates first)
//	kifpool migrate                     bring the database schema up to date
//	kifpool user create --email E [--admin]   password read from stdin
//	kifpool merchant create --email E --name N  make a user a merchant (or rename one)
//	kifpool reconcile                   verify and credit paid-but-unverified payments, report the rest;
//	                                    compare withdrawals with each payout provider's word
//	kifpool user promote|demote --email E      make a user an admin, or not
//	kifpool user reset-2fa --email E           remove a locked-out admin's authenticator
//	kifpool user set-password --email E        new password from stdin; ends sessions, revokes tokens, turns off webhooks
//	kifpool sandbank --addr HOST:PORT   run the sandbox bank on its own
//	kifpool check                       read-only audit of the database's money rules
//	kifpool backup --to FILE            online backup of the SQLite database
//	kifpool config [--reference]        the configuration in effect (secrets masked)
//	kifpool version                     module version, VCS revision, build time
//
// Configuration comes from the environment (see docs/configuration.md).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/charge"
	chargestore "github.com/kifpool/kifpool/internal/charge/sqlstore"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

const usage = `usage: kifpool <command> [flags]

commands:
  serve                            run the web app (runs migrations first)
  migrate                          bring the database schema up to date
  user create --email E [--admin]  create a user; the password is read from stdin
  user promote --email E           make an existing user an admin
  user demote --email E            make an admin an ordinary user again
  user reset-2fa --email E         remove an admin's authenticator and recovery codes (locked out)
  user set-password --email E      set a user's password (read from stdin); signs them out everywhere,
                                   revokes their API tokens and turns off their webhook endpoints
  merchant create --email E --name N
                                   make a user a merchant with display name N (again: renames it)
  reconcile                        verify and credit paid-but-unverified payments, report the rest;
                                   compare withdrawals with each payout provider's word
  check                            read-only audit of the database: exits non-zero naming each broken row
  backup --to FILE                 online backup of the SQLite database (PostgreSQL: pg_dump)
  sandbank --addr HOST:PORT [fault flags]
                                   run the sandbox bank (Zarinpal, Zibal, SEP and Mellat) on its own;
                                   kifpool sandbank -h lists the fault-injection flags
  config                           print the configuration in effect (secrets masked) and check it
  config --reference               print the configuration reference (docs/configuration.md)
  version                          print the module version, the VCS revision and the build time

configuration is read from the environment; see docs/configuration.md.
`

func main() {
	level, format, err := config.Logging(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kifpool: configuration:", err)
		os.Exit(1)
	}
	log := logging.New(os.Stderr, level, format)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "kifpool:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is a command line its command does not take (an unknown
// flag, a stray argument): main exits 2 for it, as the flag package does,
// and 1 for any other failure.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// findingsError is a run that did its work and found what a person must
// look at (reconcile's mismatches, a payout provider's differences):
// main exits 3 for it, so that a cron job or a runbook does not read the
// run as clean, nor as broken (1).
type findingsError struct{ what string }

func (e *findingsError) Error() string { return e.what }

// exitCode is main's exit status for run's error: 0 none, 2 a usage
// error, 3 findings for a person only, 1 any other failure.
func exitCode(err error) int {
	var u *usageError
	if _, findings := err.(*findingsError); findings {
		return 3 // the findings alone, no failure joined to them
	}
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// reconcileFindings is the findings of a reconciliation that ran, each
// for an admin: the top-ups whose bank answer disagrees with ours (an
// amount, an end, an authority), the payments at a bank that are none of
// ours (foreign: a lost row, or another shop on the same merchant
// account), the top-ups only the bank's portal can answer for (past the
// receipt's hour, no callback), and the differences each payout
// provider's report flagged. Nil when there are none.
func reconcileFindings(rep topup.ReconcileReport, payoutReports []withdrawal.Report) error {
	var parts []string
	if rep.Mismatches > 0 {
		parts = append(parts, fmt.Sprintf("%d top-ups disagree with their bank", rep.Mismatches))
	}
	if rep.ForeignCount > 0 {
		parts = append(parts, fmt.Sprintf("%d payments at a bank are none of ours", rep.ForeignCount))
	}
	portal := 0
	for _, it := range rep.Items() {
		if it.Kind == topup.KindReceiptExpired || it.Kind == topup.KindNoCallback {
			portal++
		}
	}
	if portal > 0 {
		parts = append(parts, fmt.Sprintf("%d top-ups to look up in the bank's portal", portal))
	}
	for _, r := range payoutReports {
		if r.Differences > 0 {
			parts = append(parts, fmt.Sprintf("payouts %s: %d differences", r.Provider, r.Differences))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &findingsError{what: "for an admin: " + strings.Join(parts, "; ") + " (the admin dashboard shows them)"}
}

// newFlagSet is a subcommand's flags: -h or --help prints usage (and the
// flags, if it has any) to stdout.
func newFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprint(stdout, usage)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprint(stdout, "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses a subcommand's arguments. help is true when they asked
// for usage (-h, --help): fs.Usage has printed it and the command must do
// nothing else. An unknown flag, or any argument left after the flags (no
// subcommand takes one), is a usageError ending in the usage's first line.
func parseFlags(fs *flag.FlagSet, args []string, usage string) (help bool, err error) {
	line, _, _ := strings.Cut(usage, "\n")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, &usageError{fmt.Errorf("%s: %w\n%s", fs.Name(), err, line)}
	}
	if fs.NArg() > 0 {
		return false, &usageError{fmt.Errorf("%s: unexpected argument %q\n%s", fs.Name(), fs.Arg(0), line)}
	}
	return false, nil
}

func run(ctx context.Context, args []string, getenv config.Getenv, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, log)
	case "migrate":
		return migrate(ctx, args[1:], getenv, stdout, log)
	case "user":
		return userCmd(ctx, args[1:], getenv, stdin, stdout, log)
	case "merchant":
		return merchantCmd(ctx, args[1:], getenv, stdout, log)
	case "sandbank":
		return sandbankCmd(ctx, args[1:], getenv, stdout, log)
	case "reconcile":
		return reconcileCmd(ctx, args[1:], getenv, stdout, log)
	case "check":
		return checkCmd(ctx, args[1:], getenv, stdout, log)
	case "backup":
		return backupCmd(ctx, args[1:], getenv, stdout, log)
	case "config":
		return configCmd(args[1:], getenv, stdout)
	case "version", "--version":
		return current().write(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stdout, usage)
	return &usageError{fmt.Errorf("unknown command %q", args[0])}
}

// isHelp reports whether arg asks for usage.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

func loadConfig(getenv config.Getenv) (config.Config, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return cfg, fmt.Errorf("configuration:\n%w", err)
	}
	warning, err := config.PrepareDataDir(cfg.DataDir)
	if err != nil {
		return cfg, err
	}
	if warning != "" {
		cfg.Warnings = append(cfg.Warnings, warning)
	}
	if cfg.Dev {
		secret, err := config.DevSessionSecret(cfg.DataDir)
		if err != nil {
			return cfg, fmt.Errorf("development session secret: %w", err)
		}
		cfg.SessionSecret = secret
	}
	return cfg, nil
}

// setup loads the configuration and opens the migrated database.
func setup(ctx context.Context, getenv config.Getenv, log *slog.Logger) (config.Config, *store.DB, error) {
	cfg, db, err := openUnmigrated(ctx, getenv, log)
	if err != nil {
		return cfg, nil, err
	}
	before, err := db.Migrations(ctx)
	if err != nil {
		_ = db.Close() // the schema's error is the one to report
		return cfg, nil, err
	}
	if err := db.Migrate(ctx, log); err != nil {
		_ = db.Close() // the migration's error is the one to report
		return cfg, nil, err
	}
	if before.Current == 0 {
		// A command run without the server's environment (DATA_DIR,
		// DATABASE_URL) finds an empty database of its own and fills it:
		// an admin made there, or a reconciliation run there, reaches
		// nothing the server sees. Said where the operator looks.
		log.Warn("this database had no schema and was made now; if the server runs on another one, run this command with the server's environment (DATABASE_URL, DATA_DIR)",
			"database", cfg.DatabaseDescription())
	}
	return cfg, db, nil
}

// openUnmigrated loads the configuration and opens the database with its
// pool sized, its schema as it is.
func openUnmigrated(ctx context.Context, getenv config.Getenv, log *slog.Logger) (config.Config, *store.DB, error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return cfg, nil, err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return cfg, nil, err
	}
	if err := db.SetPoolSize(cfg.DatabaseMaxConns); err != nil {
		_ = db.Close() // the pool's error is the one to report
		return cfg, nil, err
	}
	return cfg, db, nil
}

const migrateUsage = `usage: kifpool migrate

Brings the schema of the database of DATABASE_URL up to date (the
migrations embedded in this build) and exits; serve does the same at
start. On PostgreSQL it takes an advisory lock, so instances and migrate
runs starting together wait for one another. It takes no flags: the
configuration is the environment (docs/configuration.md).
`

func migrate(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	if help, err := parseFlags(newFlagSet("migrate", migrateUsage, stdout), args, migrateUsage); help || err != nil {
		return err
	}
	_, db, err := setup(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	log.Info("database is up to date", "dialect", db.Dialect)
	return nil
}

const serveUsage = `usage: kifpool serve

Runs the web app on LISTEN_ADDR, with its background work (the worker,
reconciliation, retention and the rest), after bringing the database
schema up to date. SIGINT or SIGTERM stops it: requests in flight finish
first. It takes no flags: the configuration is the environment (kifpool
config prints it; docs/configuration.md).
`

func serve(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	if help, err := parseFlags(newFlagSet("serve", serveUsage, stdout), args, serveUsage); help || err != nil {
		return err
	}
	log.Info("kifpool starting", current().LogArgs()...)
	// A real gateway never runs on the development secret (checked before
	// anything is written: no secret file, no migration).
	if cfg, err := config.Load(getenv); err == nil {
		if err := cfg.ServeRefusal(); err != nil {
			return fmt.Errorf("configuration:\n%w", err)
		}
	}
	cfg, db, err := openUnmigrated(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if cfg.Dev {
		w := fmt.Sprintf("no SESSION_SECRET: using a development session secret kept in %s (fine with the sandbox bank; set SESSION_SECRET, the same on every instance, before going live)",
			filepath.Join(cfg.DataDir, "session_secret"))
		log.Warn("configuration", "warning", w)
		fmt.Fprintln(stdout, "warning:", w)
	}
	// The instance's lock before the migrations: a serve refused (a
	// second one on an SQLite file, beside a sandbox's serve) has changed
	// no schema under the one that runs.
	release, err := instanceLock(ctx, cfg, db)
	if err != nil {
		return err
	}
	defer release()
	if err := db.Migrate(ctx, log); err != nil {
		return err
	}

	srv, err := newServer(ctx, cfg, db, server.Options{Log: log, RateLimits: true})
	if err != nil {
		return err
	}
	defer srv.Close() // the read database's pool (DATABASE_READ_URL)
	app := srv.App
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	go srv.Clock.Run(bgCtx) // keeps the app's clock on the database's
	waitBackground := srv.RunBackground(bgCtx, log)
	defer func() { stopBackground(); waitBackground() }()

	for _, w := range cfg.Warnings {
		log.Warn("configuration", "warning", w)
		fmt.Fprintln(stdout, "warning:", w)
	}
	if cfg.PprofAddr != "" {
		stopProfiler, err := startProfiler(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stopProfiler()
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	log.Info("kifpool is serving", "addr", ln.Addr().String(), "url", cfg.BaseURL, "gateway", cfg.Gateway, "database", cfg.DatabaseDescription())
	fmt.Fprint(stdout, banner(cfg, ln.Addr().String(), srv.Outbox.Sender().Describe()))
	log.Info("mail", "to", srv.Outbox.Sender().Describe(), "from", cfg.MailFrom)

	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	err = app.ShutdownWithTimeout(15 * time.Second)
	stopBackground()
	waitBackground() // the worker finishes what it started
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// newServer builds the app on the instance's clock (skewed in a test-hook
// build when KIFPOOL_TEST_CLOCK_SKEW says so) and syncs the app's clock
// with the database's before anything takes a lease.
func newServer(ctx context.Context, cfg config.Config, db *store.DB, o server.Options) (*server.Server, error) {
	now, err := testhook.Clock(time.Now)
	if err != nil {
		return nil, fmt.Errorf("test hooks: %w", err)
	}
	if testhook.Enabled {
		o.Log.Warn("this build has test hooks (crash points, clock skew): never run it in production",
			"crash_at", os.Getenv(testhook.EnvCrashAt), "clock_skew", os.Getenv(testhook.EnvClockSkew))
	}
	o.Now = now
	srv, err := server.New(cfg, db, o)
	if err != nil {
		return nil, err
	}
	if err := srv.Clock.Sync(ctx); err != nil {
		return nil, fmt.Errorf("database clock: %w", err)
	}
	return srv, nil
}

const userUsage = `usage: kifpool user create --email E [--admin]
       kifpool user promote --email E
       kifpool user demote --email E
       kifpool user reset-2fa --email E
       kifpool user set-password --email E

create makes a user (with --admin, an admin of /admin). On a terminal it
asks for the password twice, without showing it; otherwise the password is
the first line of stdin (kifpool user create --email E < file), so that
it appears in no process list or shell history. Passwords shown as
examples anywhere are refused, as common ones are.
promote makes an existing user an admin; demote makes an admin an
ordinary user again. reset-2fa removes the authenticator and recovery codes
of an admin who lost them: their next visit to /admin enrols a new one, and
none of their sessions counts as having passed the second factor.
set-password gives a user a new password (asked for, or read, as for create), signs
them out of every browser, revokes every API token of theirs and turns off every
webhook endpoint of theirs.
`

// banner tells the person who started serve where it runs and on what.
func banner(cfg config.Config, addr, mail string) string {
	var gws []string
	for _, name := range cfg.Gateways {
		if d, ok := drivers.Lookup(name); ok {
			gws = append(gws, d.Label+" at "+cfg.GatewayURLOf(name))
		}
	}
	gw := strings.Join(gws, ", ")
	if cfg.Gateway == config.GatewaySandbox {
		gw = "built-in sandbox bank at " + cfg.BaseURL + routes.Sandbank + " (no real money)"
	}
	return fmt.Sprintf("Kifpool is running: open %s\n  listening on %s\n  database:   %s\n  gateway:    %s\n  mail:       %s\nPress Ctrl+C to stop.\n",
		cfg.BaseURL, addr, cfg.DatabaseDescription(), gw, mail)
}

func userCmd(ctx context.Context, args []string, getenv config.Getenv, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, userUsage)
		return nil
	}
	if len(args) > 0 && (args[0] == "promote" || args[0] == "demote") {
		return roleCmd(ctx, args[0], args[1:], getenv, stdout, log)
	}
	if len(args) > 0 && args[0] == "reset-2fa" {
		return reset2FACmd(ctx, args[1:], getenv, stdout, log)
	}
	if len(args) > 0 && args[0] == "set-password" {
		return setPasswordCmd(ctx, args[1:], getenv, stdin, stdout, log)
	}
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stdout, userUsage)
		return errors.New("usage: kifpool user create --email E [--admin] (password on stdin) | user set-password --email E (password on stdin) | user promote|demote|reset-2fa --email E")
	}
	fs := newFlagSet("user create", userUsage, stdout)
	email := fs.String("email", "", "email address of the new user")
	admin := fs.Bool("admin", false, "make the user an admin")
	if help, err := parseFlags(fs, args[1:], userUsage); help || err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	password, err := readPassword(stdin, stdout, "create --email "+*email)
	if err != nil {
		return err
	}
	_, db, err := setup(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := auth.NewService(db, auth.Options{})
	if *admin {
		// One transaction: killed half-way, nothing is left to confuse
		// a second run ("already registered" for an admin without a code).
		u, code, err := svc.CreateAdmin(ctx, *email, password, "fa")
		if err != nil {
			return fmt.Errorf("create user: %w", err)
		}
		fmt.Fprintf(stdout, "created %s %s (id %d)\n", u.Role, u.Email, u.ID)
		return printEnrolmentCode(stdout, u.Email, code)
	}
	u, err := svc.SignUp(ctx, *email, password, auth.RoleUser, "fa")
	if err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	fmt.Fprintf(stdout, "created %s %s (id %d)\n", u.Role, u.Email, u.ID)
	return nil
}

const merchantUsage = `usage: kifpool merchant create --email E --name N

create makes the user of E a merchant named N (shown to payers at the
checkout and in their history), with its own balance; a merchant's API
tokens may take the scope charges. Run again, it renames the merchant.
It is written to the audit log as the command line's.
`

// merchantCmd is "kifpool merchant create".
func merchantCmd(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, merchantUsage)
		return nil
	}
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stdout, merchantUsage)
		return errors.New("usage: kifpool merchant create --email E --name N")
	}
	fs := newFlagSet("merchant create", merchantUsage, stdout)
	email := fs.String("email", "", "email address of the user")
	name := fs.String("name", "", "the merchant's display name")
	if help, err := parseFlags(fs, args[1:], merchantUsage); help || err != nil {
		return err
	}
	if *email == "" || strings.TrimSpace(*name) == "" {
		return errors.New("--email and --name are required")
	}
	cfg, db, err := setup(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := charge.New(chargestore.New(db, nil), charge.Config{BaseURL: cfg.BaseURL}, nil, log)
	m, created, err := svc.MakeMerchantByEmail(ctx, *email, *name)
	switch {
	case errors.Is(err, charge.ErrNotFound):
		return fmt.Errorf("no user %s: create the user first (kifpool user create)", *email)
	case errors.Is(err, charge.ErrBadName):
		return errors.New("--name must be 1 to 100 characters, without control or invisible characters")
	case errors.Is(err, charge.ErrAddressUnconfirmed):
		return fmt.Errorf("%s has not confirmed the e-mail address yet (the link mailed at sign-up, or a password reset): a merchant's account must be its owner's", *email)
	case err != nil:
		return fmt.Errorf("merchant create: %w", err)
	}
	log.Warn("merchant made from the command line", "user_id", m.UserID, "name", m.DisplayName)
	if created {
		fmt.Fprintf(stdout, "%s is now the merchant %q (user id %d)\n", m.Email, m.DisplayName, m.UserID)
	} else {
		fmt.Fprintf(stdout, "%s was a merchant already; renamed %q (user id %d)\n", m.Email, m.DisplayName, m.UserID)
	}
	return nil
}

// readPassword asks for a password on a terminal (twice, not echoed), or
// reads the first line of stdin when it is a pipe or a file (so that it
// appears in no process list or shell history); cmd is the subcommand,
// for the hint.
func readPassword(stdin io.Reader, stdout io.Writer, cmd string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) { // #nosec G115 -- a file descriptor fits in an int
		fd := int(f.Fd()) // #nosec G115 -- a file descriptor fits in an int
		fmt.Fprintf(stdout, "Password (at least %d characters; not shown): ", auth.MinPasswordLen)
		first, err := term.ReadPassword(fd)
		fmt.Fprintln(stdout)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		fmt.Fprint(stdout, "The same password again: ")
		again, err := term.ReadPassword(fd)
		fmt.Fprintln(stdout)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if string(first) != string(again) {
			return "", errors.New("the two passwords differ: nothing was changed")
		}
		if strings.TrimSpace(string(first)) == "" {
			return "", errors.New("no password given: nothing was changed")
		}
		return string(first), nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password from stdin: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(password) == "" {
		return "", errors.New("no password given: run kifpool user " + cmd + " on a terminal to be asked for it, or give it as the first line of stdin (< file)")
	}
	return password, nil
}

// setPasswordCmd gives a user a new password (see readPassword), ends their
// sessions, revokes their API tokens and turns off their webhook endpoints.
func setPasswordCmd(ctx context.Context, args []string, getenv config.Getenv, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	fs := newFlagSet("user set-password", userUsage, stdout)
	email := fs.String("email", "", "email address of the user")
	if help, err := parseFlags(fs, args, "usage: kifpool user set-password --email E (the password on stdin)"); help || err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	password, err := readPassword(stdin, stdout, "set-password --email "+*email)
	if err != nil {
		return err
	}
	_, db, err := setup(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	u, ended, err := auth.NewService(db, auth.Options{}).SetPassword(ctx, *email, password)
	if err != nil {
		return fmt.Errorf("set-password %s: %w", *email, err)
	}
	log.Warn("password set from the command line", "user_id", u.ID, "sessions_ended", ended.Sessions, "tokens_revoked", ended.Tokens,
		"webhook_endpoints_disabled", ended.Endpoints)
	fmt.Fprintf(stdout, "password of %s set (id %d): %d sessions signed out, %d API tokens revoked, %d webhook endpoints disabled\n",
		u.Email, u.ID, ended.Sessions, ended.Tokens, ended.Endpoints)
	return nil
}

// printEnrolmentCode shows an admin's one-time enrolment code: /admin/2fa
// asks for it before it shows a new authenticator's secret. The code is
// stored only as a hash: a failed write (a closed pipe, a full disk) is
// an error, so that the command exits non-zero instead of reporting a
// code no one saw; reset-2fa issues a new one.
func printEnrolmentCode(stdout io.Writer, email, code string) error {
	_, err := fmt.Fprintf(stdout, "enrolment code for %s: %s\n  give it to them privately: /admin/2fa asks for it once, before it shows their new authenticator\n", email, code)
	if err != nil {
		return fmt.Errorf("the enrolment code of %s was not written (%w); run `kifpool user reset-2fa --email %s` for a new one", email, err, email)
	}
	return nil
}

// roleCmd makes an existing user an admin (promote) or an ordinary user
// (demote).
func roleCmd(ctx context.Context, verb string, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	fs := newFlagSet("user "+verb, userUsage, stdout)
	email := fs.String("email", "", "email address of the user")
	if help, err := parseFlags(fs, args, "usage: kifpool user "+verb+" --email E"); help || err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	role := auth.RoleAdmin
	if verb == "demote" {
		role = auth.RoleUser
	}
	_, db, err := setup(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	ch, err := auth.NewService(db, auth.Options{}).SetRole(ctx, *email, role)
	if errors.Is(err, auth.ErrAddressUnconfirmed) {
		return fmt.Errorf("%s %s: the address is not confirmed yet (the link mailed at sign-up, or a password reset): an admin's account must be the address owner's", verb, *email)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, *email, err)
	}
	u := ch.User
	log.Warn("user role changed from the command line", "user_id", u.ID, "role", u.Role)
	what := "a user"
	if u.IsAdmin() {
		what = "an admin"
	}
	fmt.Fprintf(stdout, "%s is now %s (id %d); every session of theirs types a new second-factor code\n", u.Email, what, u.ID)
	if ch.EnrolmentCode != "" {
		return printEnrolmentCode(stdout, u.Email, ch.EnrolmentCode)
	}
	return nil
}

// reset2FACmd removes a locked-out admin's authenticator.
func reset2FACmd(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	fs := newFlagSet("user reset-2fa", userUsage, stdout)
	email := fs.String("email", "", "email address of the admin")
	if help, err := parseFlags(fs, args, "usage: kifpool user reset-2fa --email E"); help || err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	_, db, err := setup(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	u, code, err := auth.NewService(db, auth.Options{}).ResetTOTP(ctx, *email)
	if err != nil {
		return fmt.Errorf("reset-2fa %s: %w", *email, err)
	}
	log.Warn("two-factor sign-in reset from the command line", "user_id", u.ID)
	fmt.Fprintf(stdout, "two-factor sign-in of %s reset: the next visit to /admin enrols a new authenticator (id %d)\n", u.Email, u.ID)
	return printEnrolmentCode(stdout, u.Email, code)
}

// sandbankCmd runs the sandbox bank on its own. Like the built-in one it
// credits without real money, so it listens on loopback only (localhost,
// 127.0.0.0/8, ::1) unless ALLOW_SANDBOX=1: "", 0.0.0.0 or a public
// address is refused before anything listens.
func sandbankCmd(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("sandbank", flag.ContinueOnError)
	fs.SetOutput(stdout)
	addr := fs.String("addr", "127.0.0.1:9090", "HOST:PORT to listen on")
	ttl := fs.Duration("authority-ttl", 0, "how long an authority may wait for payment, every gateway's (0: each its own, 15m; SEP's token 20m)")
	faults := sandbank.ParseFaultFlags(fs)
	if help, err := parseFlags(fs, args, "usage: kifpool sandbank --addr HOST:PORT [fault flags] (-h lists them)"); help || err != nil {
		return err
	}
	f, err := faults()
	if err != nil {
		return err
	}
	if !config.LoopbackListen(*addr) && strings.TrimSpace(getenv("ALLOW_SANDBOX")) != "1" {
		return fmt.Errorf("sandbank: --addr %s is not a loopback address: the sandbox bank confirms payments without real money and never listens where others could reach it; "+
			"use 127.0.0.1:PORT, or set ALLOW_SANDBOX=1 for a demo", *addr)
	}
	bank := sandbank.New(sandbank.Options{Logger: log.With("component", "sandbank"), AuthorityTTL: *ttl, Faults: f})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	fmt.Fprintf(stdout, "sandbox bank listening on http://%s (speaks %s)\n", ln.Addr(), strings.Join(sandbank.Protocols(), ", "))
	return bank.Serve(ctx, ln)
}

const reconcileUsage = `usage: kifpool reconcile

Asks the gateways for the payments paid at the bank but not verified,
verifies and credits those that are ours and reports the rest (foreign
payments, mismatches); then, with withdrawals on, compares them with each
payout provider's list (the report on /admin/withdrawals). It exits 1
when a listed payment could not be settled or a provider's list could not
be read: run it again; 3 when it ran but found what an admin must look at
(a top-up its bank disagrees with, a foreign payment, a top-up only the
bank's portal can answer for, a payout provider's differences). A gateway
or provider another run is reconciling (serve's periodic run, an
admin's) is left to it, and the command exits 1. With GATEWAYS=sandbox the bank is the one inside
a running serve, at BASE_URL/sandbank. It brings the schema up to date
first, and takes no flags: the configuration is the environment
(docs/configuration.md).
`

func reconcileCmd(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	if help, err := parseFlags(newFlagSet("reconcile", reconcileUsage, stdout), args, reconcileUsage); help || err != nil {
		return err
	}
	// With GATEWAY=sandbox the bank lives inside the running serve and is
	// reached over HTTP at BASE_URL/sandbank, like any gateway.
	cfg, db, err := setup(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := newServer(ctx, cfg, db, server.Options{Log: log})
	if err != nil {
		return err
	}
	defer srv.Close()
	// Each gateway and provider only with its turn, the one serve's
	// periodic run and an admin's "reconcile now" take: an operator's run
	// during an incident never asks a bank at the same time as another.
	rep, held, ran, err := srv.TopUps.ReconcileNow(ctx)
	err = errors.Join(err, heldTurns(stdout, "gateway", held))
	if ran {
		fmt.Fprintf(stdout, "listed %d unverified at the gateway: %d ours, %d credited now (%d rials), %d foreign (%d rials), %d mismatches\n",
			rep.Listed, rep.Ours, rep.Credited, rep.CreditedRials, rep.ForeignCount, rep.ForeignRials, rep.Mismatches)
	}
	for _, it := range rep.Items() {
		fmt.Fprintf(stdout, "  %-16s %s %d rials %s %s\n", it.Kind, it.Authority, it.AmountRials, it.PublicID, it.Detail)
	}
	if n := rep.Left(); n > 0 {
		// Paid at the bank, not credited yet: an incident's runbook must
		// not read this run as done.
		fmt.Fprintf(stdout, "%d listed top-ups were not reconciled (an error, or the run's time spent): run kifpool reconcile again\n", n)
		err = errors.Join(err, fmt.Errorf("%d listed top-ups not reconciled", n))
	}
	if !srv.Withdrawals.On() {
		return orFindings(err, reconcileFindings(rep, nil))
	}
	// The payout providers' reconciliation, as serve's daily loop runs it
	// (stored, shown on /admin/withdrawals, counted in the metrics).
	reps, pheld, perr := srv.Withdrawals.ReconcileNow(ctx, srv.PayoutStore, srv.TopUps)
	perr = errors.Join(perr, heldTurns(stdout, "payout provider", pheld))
	for _, r := range reps {
		fmt.Fprintf(stdout, "payouts %s: checked %d, paid %d (%d rials), returned %d, in flight %d, settled %d, %d differences for an admin",
			r.Provider, r.Checked, r.Paid, r.PaidRials, r.Returned, r.InFlight, r.Settled, r.Differences)
		if r.Error != "" {
			fmt.Fprintf(stdout, " (the provider's list: %s)", r.Error)
			perr = errors.Join(perr, fmt.Errorf("payouts %s: %s", r.Provider, r.Error))
		}
		fmt.Fprintln(stdout)
		for _, d := range r.Items() {
			fmt.Fprintf(stdout, "  %-20s %s ours %s theirs %s %d rials\n", d.Kind, d.PublicID, d.Ours, d.Theirs, d.AmountRials)
		}
	}
	return orFindings(errors.Join(err, perr), reconcileFindings(rep, reps))
}

// heldTurns says which of names (kind: "gateway", "payout provider")
// were not reconciled because another run holds their turn, and is the
// error that makes the command exit 1 (run it again) when there is one.
func heldTurns(stdout io.Writer, kind string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	for _, n := range names {
		fmt.Fprintf(stdout, "%s %s: not reconciled now: another run (serve's or an admin's) is reconciling it; its report will be on the admin console; run kifpool reconcile again when it ends\n", kind, n)
	}
	return fmt.Errorf("%d %s(s) not reconciled: another run holds the turn", len(names), kind)
}

// orFindings is err when the run failed, else its findings (nil: none).
func orFindings(err, findings error) error {
	if err != nil {
		return err
	}
	return findings
}

// configCmd prints the configuration in effect, each value with where it
// came from, secrets masked; a bad configuration is reported as serve
// would report it (and the command fails), after the values.
func configCmd(args []string, getenv config.Getenv, stdout io.Writer) error {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(stdout)
	reference := fs.Bool("reference", false, "print the configuration reference (Markdown) instead")
	if help, err := parseFlags(fs, args, "usage: kifpool config [--reference]"); help || err != nil {
		return err
	}
	if *reference {
		_, err := io.WriteString(stdout, config.Reference())
		return err
	}
	cfg, loadErr := config.Load(getenv)
	settings := config.Effective(cfg, getenv)
	width := 0
	for _, s := range settings {
		width = max(width, len(s.Name)+1+len(s.Value))
	}
	fmt.Fprintln(stdout, "# Kifpool configuration in effect (secrets masked); see docs/configuration.md")
	for _, s := range settings {
		fmt.Fprintf(stdout, "%-*s  # %s\n", width, s.Name+"="+s.Value, s.Source)
	}
	if loadErr == nil {
		// What serve alone refuses (a real gateway without
		// SESSION_SECRET) fails the check too: a pre-flight that passes
		// is a start that passes.
		loadErr = cfg.ServeRefusal()
	}
	if cfg.Dev && loadErr == nil {
		fmt.Fprintf(stdout, "# no SESSION_SECRET: a development secret is kept in %s\n", filepath.Join(cfg.DataDir, "session_secret"))
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stdout, "# warning:", w)
	}
	if loadErr != nil {
		return fmt.Errorf("configuration:\n%w", loadErr)
	}
	return nil
}
