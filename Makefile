# Kifpool. `make run` starts the app on the embedded defaults (SQLite file
# + built-in sandbox bank); `make test` runs every test.
GO        ?= go
BIN       := bin/kifpool
PKGS      := ./...
# PostgreSQL for the integration tests (skipped when unset, mandatory with
# REQUIRE_POSTGRES=1 as in CI).
TEST_DATABASE_URL ?=
export TEST_DATABASE_URL

.PHONY: image test-skips run build install test test-quick generate docs lint fmt fuzz bench bench-short bench-go bench-admin bench-admin-queries screenshots browser-deps compat-deps clean

# The browser tests' Chromium and axe-core (same defaults as web/browsertest).
CHROMIUM_BIN = $${CHROMIUM:-/usr/bin/chromium}
AXE_JS       = $${AXE_CORE_JS:-.ci/axe/node_modules/axe-core/axe.min.js}
# The client-library suite's node_modules (same default as internal/sandbank's compat tests).
COMPAT_MODULES = $${COMPAT_NODE_MODULES:-.ci/compat/node_modules}

# One line per suite that `go test` skips for want of PostgreSQL, a
# browser or the gateway client libraries, with the command that enables it (shown after the test run, so
# that it is the last thing on screen).
define SKIPPED
if [ -z "$$TEST_DATABASE_URL" ]; then echo "make test: SKIPPED the PostgreSQL suites (TEST_DATABASE_URL is unset); to run them: createdb kifpool_test && TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/kifpool_test?sslmode=disable' make test"; \
elif [ "$$REQUIRE_POSTGRES" != 1 ] && command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -d "$$TEST_DATABASE_URL"; then echo "make test: SKIPPED the PostgreSQL suites (no PostgreSQL answers at TEST_DATABASE_URL); start PostgreSQL, or run with REQUIRE_POSTGRES=1 to make this a failure"; fi; \
if [ "$$REQUIRE_BROWSER" != 1 ]; then \
  if [ ! -x "$(CHROMIUM_BIN)" ]; then echo "make test: SKIPPED the browser suite (web/browsertest: no Chromium at $(CHROMIUM_BIN)); to run it: apt-get install -y chromium nodejs npm && make browser-deps && make test"; \
  elif [ ! -f "$(AXE_JS)" ]; then echo "make test: SKIPPED the browser suite (web/browsertest: no axe-core at $(AXE_JS)); to run it: make browser-deps && make test"; fi; \
fi; \
if [ "$$REQUIRE_COMPAT" != 1 ]; then \
  if ! command -v node >/dev/null 2>&1; then echo "make test: SKIPPED the client-library suite (internal/sandbank: no node on PATH); to run it: apt-get install -y nodejs npm && make compat-deps && make test"; \
  elif [ ! -f "$(COMPAT_MODULES)/zarinpal-node-sdk/package.json" ] || [ ! -f "$(COMPAT_MODULES)/zarinpal-checkout/package.json" ] || [ ! -f "$(COMPAT_MODULES)/zibal/package.json" ] || [ ! -f "$(COMPAT_MODULES)/mellat-checkout/package.json" ]; then echo "make test: SKIPPED the client-library suite (internal/sandbank: no gateway client libraries in $(COMPAT_MODULES)); to run it: make compat-deps && make test"; fi; \
fi
endef

# The binary records the VCS revision it is built from (Go's build info;
# -buildvcs=auto wins over a GOFLAGS=-buildvcs=false) and the build time:
# kifpool version prints them, serve logs them at start. Go finds no VCS
# data in a git worktree (.git is a file there), so the revision and its
# commit time are also passed from git when it answers.
BUILD_TIME  = $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
GIT_REV     = $(shell git rev-parse HEAD 2>/dev/null)
GIT_TIME    = $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
GIT_DIRTY   = $(shell test -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo true)
BUILD_FLAGS = -buildvcs=auto -ldflags '-X main.buildTime=$(BUILD_TIME) -X main.gitRevision=$(GIT_REV) -X main.gitTime=$(GIT_TIME) -X main.gitModified=$(GIT_DIRTY)'

# A first build compiles every dependency (about a minute): say so before
# the screen stays quiet.
build:
	@echo "building ./$(BIN) (the first build takes about a minute)…"
	$(GO) build $(BUILD_FLAGS) -o $(BIN) ./cmd/kifpool

# kifpool into $$GOBIN (or $$(go env GOPATH)/bin).
install:
	$(GO) install $(BUILD_FLAGS) ./cmd/kifpool

# axe-core for the browser tests' accessibility audit (Chromium itself comes
# from the system: apt-get install -y chromium).
browser-deps:
	cd .ci/axe && npm ci --no-audit --no-fund --loglevel=error

# The third-party gateway client libraries (npm) that internal/sandbank's
# compatibility tests run against the sandbox bank; they need node.
compat-deps:
	cd .ci/compat && npm ci --no-audit --no-fund --loglevel=error


run: build
	@echo "Starting ./$(BIN) serve (configuration from the environment, see docs/configuration.md): it prints its address and database."
	./$(BIN) serve

# Both test targets record which code of the templ packages (./views,
# ./views/admin, ./internal/sandbank/page) the suite ran
# (-coverpkg) and then check that every templ component was rendered by
# some test (views: TestEveryComponentIsRendered).
VIEWS_COVER   = bin/views.cover
VIEWS_COVERED = mkdir -p bin && VIEWS_COVERPROFILE=$(CURDIR)/$(VIEWS_COVER) $(GO) test -count=1 -run '^TestEveryComponentIsRendered$$' ./views

test:
	@mkdir -p bin
	@echo "$(GO) test -race -count=1 -timeout 30m -coverpkg=./views,./views/admin,./internal/sandbank/page -coverprofile=$(VIEWS_COVER) $(PKGS)"
	@$(GO) test -race -count=1 -timeout 30m -coverpkg=./views,./views/admin,./internal/sandbank/page -coverprofile=$(VIEWS_COVER) $(PKGS) && $(VIEWS_COVERED); rc=$$?; $(SKIPPED); exit $$rc

# The lines `make test` prints for skipped suites, alone (tested in
# cmd/kifpool, so that they cannot go stale).
test-skips:
	@$(SKIPPED)

# The inner loop: unit, SQLite and HTTP tests, no race detector. -short
# skips what is slow or needs more than Go: the browser suite
# (web/browsertest), the real processes (internal/e2e) and the PostgreSQL
# suites (internal/store/storetest), whatever the environment says.
test-quick:
	@mkdir -p bin
	$(GO) test -short -count=1 -coverpkg=./views,./views/admin,./internal/sandbank/page -coverprofile=$(VIEWS_COVER) $(PKGS)
	@$(VIEWS_COVERED)
	@echo "make test-quick: left out the PostgreSQL, browser and end-to-end suites and the race detector; make test runs everything"

generate:
	$(GO) tool templ generate

# docs/configuration.md from the table of options in internal/config
# (a test fails when they differ).
docs:
	$(GO) run ./cmd/kifpool config --reference > docs/configuration.md.tmp && mv docs/configuration.md.tmp docs/configuration.md

# The linters are tools of their own module (tools/go.mod, run with
# -modfile), so that the app's go.mod lists only what the app and its tests
# use; templ stays a tool of the app module, whose generated code must
# match the templ library the app links. gosec fails on any finding; no rule is excluded
# globally: each exception is a `// #nosec Gxxx -- reason` where it is made,
# and an annotation without its rule or its reason is itself an error.
# Generated templ files are scanned too (they have no findings). About 20 s
# of CPU.
LINT_TOOL = $(GO) tool -modfile=tools/go.mod
GOSEC = $(LINT_TOOL) gosec -quiet -fmt text -color=false -nosec-require-rules -nosec-require-justification $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(LINT_TOOL) staticcheck $(PKGS)
	$(GOSEC)
	$(GO) tool templ generate
	@git diff --exit-code -- '*_templ.go' || { echo "templ generate changed files: run make generate and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- '*_templ.go'); if [ -n "$$untracked" ]; then echo "untracked generated files: $$untracked"; exit 1; fi

# Fuzz targets (package:target); each runs FUZZTIME beyond its seeds.
# FUZZTIME is a count of executions (Nx), not a duration: Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" when
# a duration runs out while a starved worker is mid-call (go.dev/issue/75804).
# A count has no deadline to race; a busy machine only makes it slower.
FUZZTIME ?= 300000x
FUZZ_TARGETS := ./internal/money/:FuzzParseTomans ./internal/gateway/zarinpal/:FuzzParseCallback \
	./internal/gateway/zarinpal/:FuzzDecode ./internal/email/:FuzzNormalize \
	./internal/idempotency/:FuzzFingerprint ./web/api/:FuzzTopUpFingerprint \
	./internal/gateway/drivers/:FuzzEveryDriverCallback ./internal/gateway/mellat/:FuzzReadReturn \
	./internal/gateway/sep/:FuzzVerifyAnswer ./internal/iban/:FuzzParse ./internal/iban/:FuzzParseNationalCode \
	./internal/topup/:FuzzValidPublicID ./views/:FuzzLocalHref
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$fn ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; done

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')

# The load run: serve on PostgreSQL (BENCH_DATABASE_URL, default the local
# kifpool_bench, dropped and created afresh) and a standalone sandbox bank
# as separate processes, driven by cmd/kifpool-load; a table on screen and
# a JSON report under data/bench/. bench-short proves the harness works
# (small counts, judges no speed; run by CI).
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/kifpool_bench?sslmode=disable
# ONLY=<part of a step's name> runs only those steps; PROFILE=8s takes a CPU
# profile of each step's first 8 s (serve's PPROF_ADDR) into data/bench/.
# CREDITS=12000 makes the credit path's step that many callbacks (1,500 by
# default): a before/after of the credit path needs a longer step.
# The ledger transfer's design limit is internal/ledger/transfer.pgbench run
# by pgbench (PGBENCH: the newest PostgreSQL's, else pgbench on PATH).
PGBENCH ?= $(or $(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin/pgbench))),pgbench)
bench: build
	$(GO) build -o bin/kifpool-load ./cmd/kifpool-load
	./bin/kifpool-load -bin $(BIN) -db '$(BENCH_DATABASE_URL)' -pgbench '$(PGBENCH)' $(if $(ONLY),-only '$(ONLY)') $(if $(PROFILE),-profile $(PROFILE)) $(if $(SOAK),-soak $(SOAK)) $(if $(CREDITS),-credits $(CREDITS))

bench-short: build
	$(GO) build -o bin/kifpool-load ./cmd/kifpool-load
	./bin/kifpool-load -short -bin $(BIN) -db '$(BENCH_DATABASE_URL)' -pgbench '$(PGBENCH)'
	./bin/kifpool-load -admin -short -fetches 2 -bin $(BIN) -db '$(BENCH_ADMIN_SHORT_DATABASE_URL)'

# In-process Go benchmarks (client, app and bank in one process; SQLite,
# and PostgreSQL with TEST_DATABASE_URL).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 5s -timeout 10m ./web/scenario/ ./internal/money/

# The admin console and the payer's pages at scale (cmd/kifpool-load
# -admin): seeds BENCH_TOPUPS (default 10,000,000) top-ups over a hundredth
# as many users, their events, ledger transactions and postings, and a
# tenth as many transfers, with generated SQL into BENCH_ADMIN_DATABASE_URL
# (dropped and created afresh; REUSE=1 keeps a previous run's, migrated to
# this build), then times every admin page, search kind, the payer's
# pages and the API's lists from outside over HTTP (20 fetches each,
# p50/p95) and `kifpool check`. Tens of minutes at 10M on 2 cores; disk:
# about 20 GB. bench-short runs it at 20,000 top-ups.
BENCH_ADMIN_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/kifpool_bench_admin?sslmode=disable
BENCH_ADMIN_SHORT_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/kifpool_bench_admin_short?sslmode=disable
BENCH_TOPUPS ?= 10000000
bench-admin: build
	$(GO) build -o bin/kifpool-load ./cmd/kifpool-load
	./bin/kifpool-load -admin -bin $(BIN) -db '$(BENCH_ADMIN_DATABASE_URL)' -topups $(BENCH_TOPUPS) $(if $(REUSE),-reuse)

# The payment list's and the dashboard's queries in process (no HTTP):
# seeds BENCH_PAYMENTS (default 1,000,000) top-ups into a fresh schema of
# TEST_DATABASE_URL and prints each query kind's EXPLAIN ANALYZE and its
# p50/p95 over 40 runs.
bench-admin-queries:
	@test -n "$(TEST_DATABASE_URL)" || { echo "bench-admin-queries needs TEST_DATABASE_URL (PostgreSQL)"; exit 1; }
	REQUIRE_POSTGRES=1 $(GO) test -run '^$$' -bench '^BenchmarkAdmin$$' -benchtime 40x -timeout 30m ./internal/topupread/

# PNGs of the main pages (fa/en, phone/desktop) into docs/screenshots/,
# through the browser tests' harness (chromium + the sandbox bank).
screenshots:
	SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots REQUIRE_BROWSER=1 $(GO) test -count=1 -run '^TestScreenshots$$' ./web/browsertest/
	@du -ch docs/screenshots/*.png | tail -1

# A FROM scratch container image (deploy/container/Containerfile) with
# Debian's buildah, no daemon: the static binary, CA certificates, tzdata.
IMAGE ?= kifpool:latest
image:
	rm -rf bin/image && mkdir -p bin/image/data
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/image/kifpool ./cmd/kifpool
	cp /etc/ssl/certs/ca-certificates.crt bin/image/
	cp -r /usr/share/zoneinfo bin/image/zoneinfo
	buildah bud --layers=false -f deploy/container/Containerfile -t $(IMAGE) bin/image

clean:
	rm -rf bin
