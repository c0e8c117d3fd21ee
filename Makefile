# Kifpool. `make run` starts the app on the embedded defaults (SQLite file
# + built-in sandbox bank); `make test` runs every test.
GO        ?= go
BIN       := bin/kifpool
PKGS      := ./...
# PostgreSQL for the integration tests (skipped when unset, mandatory with
# REQUIRE_POSTGRES=1 as in CI).
TEST_DATABASE_URL ?=
export TEST_DATABASE_URL

.PHONY: run build test test-short generate lint fmt bench screenshots clean

build:
	$(GO) build -o $(BIN) ./cmd/kifpool


run: build
	@echo "Starting Kifpool on $${BASE_URL:-http://localhost:8080} (SQLite ./data/kifpool.db, sandbox bank). Ctrl+C stops it."
	./$(BIN) serve

test:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

generate:
	$(GO) tool templ generate

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool templ generate
	@git diff --exit-code -- '*_templ.go' || { echo "templ generate changed files: run make generate and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- '*_templ.go'); if [ -n "$$untracked" ]; then echo "untracked generated files: $$untracked"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 5s -timeout 10m ./web/ ./internal/money/

# PNGs of the main pages (fa/en, phone/desktop) into web/screenshots/,
# through the browser tests' harness (chromium + the sandbox bank).
screenshots:
	SCREENSHOTS_DIR=$(CURDIR)/web/screenshots REQUIRE_BROWSER=1 $(GO) test -count=1 -run '^TestScreenshots$$' ./web/browsertest/
	@du -ch web/screenshots/*.png | tail -1

clean:
	rm -rf bin
