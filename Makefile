# Session Supervisor. `make run` builds and starts the app; `make test` runs
# every check CI runs. Both install what they need first.
GO ?= go
GO_MODULE := github.com/session-supervisor/session-supervisor
BIN := bin/session-supervisor
HOOK_BIN := bin/session-supervisor-hook
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# The app's build tags. no_emoji leaves out Fyne's bundled colour emoji font
# (4.2 MB in the binary, parsed again for every text style the window uses:
# 17 MB of the tray-only desktop's 148 MB RSS). Emoji in an agent's text are
# drawn from the system's fonts where it has one (e2e/testbin_test.go builds
# the tests' app the same way).
APP_TAGS := no_emoji
# Our patch of Fyne's event loop (packaging/fyneoverlay: it sleeps while the
# window is idle instead of ticking 60 times a second), compiled in with
# -overlay by every build of the app. cmd/fyne-overlay prepares it for the
# Fyne go.mod selects (found with the go command, the copy made once) and
# prints the JSON's path; a build without it runs upstream's loop.
FYNE_OVERLAY = -overlay "$$($(GO) run ./cmd/fyne-overlay bin/fyne-overlay)"
STATICCHECK_VERSION := v0.7.0
TOOLS := $(CURDIR)/.cache/bin
# govulncheck, pinned, reads an offline vulnerability database built from a
# pinned golang.org/x/vulndb module (its data/osv entries), which the Go
# module proxy serves: nothing in lint needs vuln.go.dev. Bump VULNDB_VERSION
# (a pseudo-version of x/vulndb's master) to take newer advisories.
GOVULNCHECK_VERSION := v1.9.0
GOVULNCHECK := $(TOOLS)/govulncheck-$(GOVULNCHECK_VERSION)/govulncheck
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
VULNDB := $(CURDIR)/.cache/vulndb/$(VULNDB_VERSION)
# The real Claude Code CLI for the end-to-end tests, pinned, in a git-ignored cache.
CLAUDE_VERSION := 2.1.197
CLAUDE_BIN := $(CURDIR)/.cache/claude/node_modules/.bin/claude
# The real Codex CLI, the same way (sessions/codex/fakeapi.CodexVersion).
CODEX_VERSION := 0.171.0
CODEX_BIN := $(CURDIR)/.cache/codex/node_modules/.bin/codex
# The real Copilot CLI, the same way (sessions/copilot/fakeapi.CopilotVersion):
# a Node loader plus the native binary of npm's platform package.
COPILOT_VERSION := 1.0.102
COPILOT_BIN := $(CURDIR)/.cache/copilot/node_modules/.bin/copilot

# The real Gemini CLI, the same way (sessions/gemini/fakeapi.GeminiVersion).
GEMINI_VERSION := 0.61.0
GEMINI_BIN := $(CURDIR)/.cache/gemini/node_modules/.bin/gemini

# The real OpenCode CLI, the same way (sessions/opencode/fakeapi.OpenCodeVersion);
# its npm package carries the native binary for the platform.
OPENCODE_VERSION := 1.18.33
OPENCODE_BIN := $(CURDIR)/.cache/opencode/node_modules/.bin/opencode
# The interactive CLI for the terminal-session test (terminal_cli_e2e_test.go):
# its session registry and inbox socket need >= 2.1.224, which the pin above
# predates (two of the other end-to-end tests fail on 2.1.328, so that pin stays).
CLAUDE_INTERACTIVE_VERSION := 2.1.328
CLAUDE_INTERACTIVE_BIN := $(CURDIR)/.cache/claude-interactive/node_modules/.bin/claude
# One CGO setting for build and tests so they share the build cache.
export CGO_ENABLED := 1
# The Go release go.mod's toolchain line names (a patch release with the
# standard library's security fixes govulncheck checks for): the go command
# fetches it from the module proxy once (about 76 MB). Set here because a
# Go whose go.env says GOTOOLCHAIN=local ignores that line.
export GOTOOLCHAIN := $(or $(shell sed -n 's/^toolchain //p' go.mod),local)
# Release packages are built under dist/ (git-ignored).
DIST := dist
PKG_LINUX := session-supervisor-$(VERSION)-linux-$(shell $(GO) env GOARCH)
WINDOWS_BIN := bin/session-supervisor.exe

.PHONY: all deps test-deps build hook run test suites lint lint-beside lint-static vulncheck unit unit-race unit-norace unit-compile e2e bench bench-idle bench-machines bench-usage clean package-linux build-windows check-windows

all: build

deps:
	@./packaging/install-deps.sh build

test-deps:
	@./packaging/install-deps.sh test

build: deps
	$(GO) build -tags '$(APP_TAGS)' $(FYNE_OVERLAY) -ldflags '$(LDFLAGS)' -o $(BIN) .
	$(MAKE) --no-print-directory hook

# The Claude Code hook (`session-supervisor hooks install`) beside the app:
# cgo-free, so the CLI's spawn per event costs ~2 ms, not the app's Fyne start.
hook:
	CGO_ENABLED=0 $(GO) build -o $(HOOK_BIN) ./cmd/session-supervisor-hook

run: build
	./$(BIN) run

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOVULNCHECK):
	GOBIN=$(dir $@) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

# The v1 database layout govulncheck -db file:// reads, from the pinned
# module's OSV entries (cmd/vulndb-index); built aside and moved into place,
# so an interrupted build is redone, not used.
$(VULNDB)/index/modules.json: cmd/vulndb-index/main.go
	@dir=$$($(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  test -d "$$dir/data/osv" || { echo "golang.org/x/vulndb@$(VULNDB_VERSION): no data/osv"; exit 1; }; \
	  rm -rf $(VULNDB).tmp && $(GO) run ./cmd/vulndb-index -vulns "$$dir/data/osv" -out $(VULNDB).tmp && \
	  rm -rf $(VULNDB) && mv $(VULNDB).tmp $(VULNDB)

# lint is the static checks and the vulnerability check; under -j they run
# side by side.
lint: lint-static vulncheck

lint-static: $(TOOLS)/staticcheck
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.cache/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags '$(APP_TAGS)' $(FYNE_OVERLAY) ./...
	GOFLAGS=-overlay="$$($(GO) run ./cmd/fyne-overlay bin/fyne-overlay)" $(TOOLS)/staticcheck -tags '$(APP_TAGS)' ./...

# In binary mode, on the binaries as shipped: a source scan type-checks
# every dependency from source (modernc's SQLite alone is tens of MB), which
# took 8.7 minutes of a cold make test; the binaries' compile is the one vet
# already did (it runs after the static checks, so nothing compiles twice
# at once) and the end-to-end suite reuses it.
vulncheck: $(GOVULNCHECK) $(VULNDB)/index/modules.json lint-static build
	$(GOVULNCHECK) -db file://$(VULNDB) -mode=binary $(BIN)
	$(GOVULNCHECK) -db file://$(VULNDB) -mode=binary $(HOOK_BIN)

# Each CLI installs with `npm ci` from the package.json and package-lock.json
# committed under packaging/test-clis/NAME (its pin and every dependency's
# integrity hash), into .cache/NAME, and again whenever either file changes:
# .installed-lock.json, a copy of the lockfile written last, says which one
# the install is from (npm's extracted files carry 1985 mtimes, so the binary
# itself cannot tell make). Regenerate a lockfile after changing a pin with
# `npm install --package-lock-only --no-audit --no-fund` in its directory.
# `npm ci` runs with a throwaway TMPDIR (OpenCode's postinstall leaves an
# empty $TMPDIR/opencode) and keeps the user's npm cache. The `--version`
# that checks an install runs with a throwaway HOME and TMPDIR (not HOME
# itself: Codex puts no helpers in a CODEX_HOME under TMPDIR, and warns) in
# the install's folder, removed after it: even that writes state
# (~/.codex/tmp, ~/.gemini/projects.json.*.tmp, OpenCode's XDG directories
# and $TMPDIR/opencode, Copilot's unpacked runtime), none of it the
# developer's.
TEST_CLIS := claude claude-interactive codex copilot gemini opencode
# NAME's binary, and its npm package and version as package.json must pin them.
CLI_BIN_claude := $(CLAUDE_BIN)
CLI_PIN_claude := "@anthropic-ai/claude-code": "$(CLAUDE_VERSION)"
CLI_BIN_claude-interactive := $(CLAUDE_INTERACTIVE_BIN)
CLI_PIN_claude-interactive := "@anthropic-ai/claude-code": "$(CLAUDE_INTERACTIVE_VERSION)"
CLI_BIN_codex := $(CODEX_BIN)
CLI_PIN_codex := "@openai/codex": "$(CODEX_VERSION)"
CLI_BIN_copilot := $(COPILOT_BIN)
CLI_PIN_copilot := "@github/copilot": "$(COPILOT_VERSION)"
CLI_BIN_gemini := $(GEMINI_BIN)
CLI_PIN_gemini := "@google/gemini-cli": "$(GEMINI_VERSION)"
CLI_BIN_opencode := $(OPENCODE_BIN)
CLI_PIN_opencode := "opencode-ai": "$(OPENCODE_VERSION)"

$(CURDIR)/.cache/%/.installed-lock.json: packaging/test-clis/%/package.json packaging/test-clis/%/package-lock.json
	@grep -Fq '$(CLI_PIN_$*)' packaging/test-clis/$*/package.json || \
	  { echo 'packaging/test-clis/$*/package.json does not pin $(CLI_PIN_$*) as the Makefile does: regenerate it and its lockfile'; exit 1; }
	@mkdir -p $(dir $@)
	rm -f $@
	cp packaging/test-clis/$*/package.json packaging/test-clis/$*/package-lock.json $(dir $@)
	rm -rf $(dir $@)version-home && mkdir -p $(dir $@)version-home/tmp
	TMPDIR=$(dir $@)version-home/tmp npm ci --prefix $(dir $@) --no-audit --no-fund
	HOME=$(dir $@)version-home TMPDIR=$(dir $@)version-home/tmp $(CLI_BIN_$*) --version
	rm -rf $(dir $@)version-home
	cp packaging/test-clis/$*/package-lock.json $@

# The real CLIs the tests run, and E2E_REQUIRED, which makes a test that
# needs one fail, not skip, when it is missing: under `make test` every one
# is installed first.
CLIS := $(foreach n,$(TEST_CLIS),$(CURDIR)/.cache/$(n)/.installed-lock.json)
CLI_ENV := CLAUDE_BIN=$(CLAUDE_BIN) CODEX_BIN=$(CODEX_BIN) COPILOT_BIN=$(COPILOT_BIN) GEMINI_BIN=$(GEMINI_BIN) OPENCODE_BIN=$(OPENCODE_BIN) CLAUDE_INTERACTIVE_BIN=$(CLAUDE_INTERACTIVE_BIN) E2E_REQUIRED=1
# E2E_PARALLEL is how many end-to-end scenarios run at once: most of their
# time is spent waiting on the supervisor's clock, not on a core.
E2E_PARALLEL ?= 4

# Every package but the end-to-end suites, with the race detector (some
# adapter tests still run a real CLI against its fake API: they are the
# adapter's own tests). The ci tag selects Fyne's software driver: no unit
# test opens a real window (the desktop is tested end to end, built as
# shipped), and the race build then skips compiling the GL and GLFW C
# bindings a third time (cgo's pass over go-gl alone takes minutes).
#
# The window's own tests (app/) run without it: they are single-threaded
# Fyne test-driver renders, whose cost is text shaping in go-text, which the
# race detector made six times slower (177 s of CPU against 28 s, measured)
# with nothing of ours to watch. Their model and the tray, which the window's
# goroutines feed, stay under the detector.
UNIT_NORACE := $(GO_MODULE)/app
# The packages whose tests take longest come first, the longest first (warm,
# measured): go test starts the packages in the order given, UNIT_PROCS at a
# time, so a long one near the end of the alphabet (the supervisor's, 105 s)
# ran alone after every other had finished. The rest follow in go list's order.
UNIT_FIRST := ./supervisor ./sessions/gemini ./sessions/opencode ./sessions/copilot ./sessions/claude/fakeapi . ./sessions/codex ./supervisor/core ./sessions
UNIT_RACE = $$($(GO) list $(UNIT_FIRST) ./... | grep -v -e '/e2e$$' -e '^$(UNIT_NORACE)$$')
# How many of a package's parallel tests run at once (go test's default is
# the number of cores): those marked t.Parallel() drive a real CLI and wait
# on it, not on a core (sessions/gemini: each in a world of its own).
UNIT_PARALLEL ?= 4
# How many test binaries (and links) run at once in the race part: one more
# than the two cores, because after the first two minutes (the soak and
# OpenCode, which keep both busy) it is bound by waits (Gemini's CLI, each
# small package's link and start), not by a core: 55 to 80 % busy at -p 2
# (measured each 5 s); 272 -> 235 s at -p 3.
UNIT_PROCS ?= 3
# The race detector sleeps a second at every test binary's exit (its
# atexit_sleep_ms, for reports from goroutines still running then): about
# 60 seconds of the race part's slots. A race while a test runs still fails
# that test (the testing package checks after each one).
UNIT_GORACE := atexit_sleep_ms=0

# The race part and the window's tests side by side, the window's at nice 10:
# they are one core's work (text shaping) that fills the race part's waits
# instead of running after it (272 + 44 s in a row; 251 s side by side,
# measured). Each run has a TMPDIR of its own (packaging/leftovers.sh),
# which must be empty when it ends: a test that leaves a file there fails
# the run.
# Under make test, the sub-make's own -j2 prints "-j2 forced in submake:
# resetting jobserver mode": meant, the two halves always run side by side.
unit: test-deps $(CLIS)
	$(MAKE) --no-print-directory -j2 --output-sync=line unit-race unit-norace

# unit's two halves: they take its installs as done (run `make unit`).
unit-race:
	./packaging/leftovers.sh env $(CLI_ENV) GORACE=$(UNIT_GORACE) $(GO) test -race -tags ci -count=1 -timeout 20m -p $(UNIT_PROCS) -parallel $(UNIT_PARALLEL) $(UNIT_RACE)

unit-norace:
	nice -n 10 ./packaging/leftovers.sh env $(CLI_ENV) $(GO) test -tags ci -count=1 -timeout 20m $(UNIT_NORACE)

# The unit tests' compile alone (each test binary built and handed to
# `true` instead of run: nothing runs, not even a TestMain), so that `unit`
# after it finds every package in the build cache. make test runs it beside
# the end-to-end suite: the race build of every package, modernc's SQLite
# and Fyne included, was most of the unit tests' 8.2 minutes after the
# suite (measured from a fresh clone).
unit-compile: test-deps
	$(GO) test -race -tags ci -count=1 -exec true $(UNIT_RACE) > /dev/null
	$(GO) test -tags ci -count=1 -exec true $(UNIT_NORACE) > /dev/null

# The end-to-end suites (e2e/): the real binary, the real CLIs, terminals,
# the desktop under Xvfb. The driver needs no race detector (the binaries
# it runs are built without one); its scenarios run in parallel.
e2e: test-deps $(CLIS)
	$(CLI_ENV) $(GO) test -count=1 -timeout 40m -parallel $(E2E_PARALLEL) ./e2e/

# A Windows compile (check-windows, below) is part of the tests so it never silently breaks.
# First the binaries, the CLI installs (network) and the lint's tools, side
# by side. Then the end-to-end suite, which spends most of its time waiting
# on the supervisor's clock rather than on a core, runs with the lint and
# the Windows check beside it at nice 19: pure compiles and analyses,
# nothing timed, that take only the cycles the suite leaves idle (the vet
# and the binaries share one compile: both build with the app's tags and the Fyne overlay). The
# unit tests follow the suite, not beside it: some drive real CLIs against
# deadlines. (Unit tests beside the suite took a cold make test from about
# 40 to 30.7 min once, but two timing-bound scenarios failed there.) Their
# compile, which runs nothing, is beside it (unit-compile).
test: test-deps
	$(MAKE) --no-print-directory -j4 --output-sync=line build $(CLIS) $(TOOLS)/staticcheck $(GOVULNCHECK) $(VULNDB)/index/modules.json
	$(MAKE) --no-print-directory -j3 suites lint-beside

# The end-to-end suite, then the unit tests (the Windows check may still be
# compiling beside them, at nice 19). The make above them does not sync its
# output, so each suite's progress shows as it runs (lint-beside syncs its own).
suites:
	$(MAKE) --no-print-directory e2e
	$(MAKE) --no-print-directory unit

# The lint, the unit tests' compile and the Windows check at the lowest
# priority (make test), in that order: the unit tests wait for the suite,
# and then for what of their compile is left.
lint-beside:
	nice -n 19 $(MAKE) --no-print-directory --output-sync=line lint unit-compile check-windows

# The Linux release tarball: the binary, install.sh (puts everything in the
# user's XDG directories), the desktop entry and the hicolor icons.
package-linux: build
	rm -rf $(DIST)/$(PKG_LINUX) $(DIST)/$(PKG_LINUX).tar.gz
	./packaging/linux/stage.sh $(BIN) $(DIST)/$(PKG_LINUX)
	tar -C $(DIST) --owner=0 --group=0 -czf $(DIST)/$(PKG_LINUX).tar.gz $(PKG_LINUX)
	@echo "built $(DIST)/$(PKG_LINUX).tar.gz"

# Cross-compiles the Windows GUI build (-H=windowsgui: no console window)
# with mingw-w64: cgo, because Fyne's GLFW and GL bindings are C. The
# compiler comes from the test profile of install-deps.sh.
# make test's Windows check: every package of ours and every dependency
# compiled for Windows, with Fyne's software driver (the ci tag) in place of
# its GLFW one. The GLFW driver's cgo over go-gl with mingw is 580 of the
# full cross-build's 858 CPU seconds cold (measured: cgo's own passes over
# go-gl's C, whatever the optimisation level) and compiles only pinned
# upstream code, unchanged until Fyne or go-gl is bumped: build-windows
# (the shipped binary) is what to run then.
check-windows: test-deps
	GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc $(GO) build -tags '$(APP_TAGS) ci' $(FYNE_OVERLAY) -o /dev/null .

build-windows: test-deps
	GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc $(GO) build -tags '$(APP_TAGS)' $(FYNE_OVERLAY) -ldflags '$(LDFLAGS) -H=windowsgui' -o $(WINDOWS_BIN) .

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The app's idle cost: `run --headless` with N idle sessions and M unrelated
# processes, its CPU and RSS over a window (e2e/idle_bench_test.go; not in
# make test). BENCH_IDLE_MODE (headless, tray, window), BENCH_IDLE_SESSIONS,
# BENCH_IDLE_PROCS, BENCH_IDLE_SECONDS, BENCH_IDLE_PROFILE (a directory for
# the CPU and heap profiles of the window).
bench-idle:
	$(GO) test -tags benchidle -count=1 -v -run '^TestBenchIdle$$' ./e2e/

# The desktop's idle cost with other machines attached: one sshd, N headless
# supervisors with M idle sessions each, against a desktop with no machines
# (e2e/machines_bench_test.go; not in make test). BENCH_IDLE_MACHINES,
# BENCH_IDLE_SESSIONS (per machine), BENCH_IDLE_SECONDS.
bench-machines:
	$(GO) test -tags benchidle -count=1 -v -timeout 60m -run '^TestBenchIdleMachines$$' ./e2e/

# The cold scan of a gigabyte of generated Claude transcripts (1,000 files,
# in a temporary directory) against ccusage, the tool users compare with, on
# the same directory in the same run: each one's time, peak RSS and tokens
# per model (sessions/claude/claudeterm/usagescan_bench_test.go; not in make
# test). BENCH_USAGE_MB makes the directory smaller. ccusage is pinned and
# installed like the CLIs, from packaging/test-clis/ccusage-ref (npm ci in
# its directory: with --prefix npm 11 refuses this lockfile).
CCUSAGE_VERSION := 17.2.1
CCUSAGE := $(CURDIR)/.cache/ccusage-ref/.installed-lock.json
$(CCUSAGE): packaging/test-clis/ccusage-ref/package.json packaging/test-clis/ccusage-ref/package-lock.json
	@grep -Fq '"ccusage": "$(CCUSAGE_VERSION)"' packaging/test-clis/ccusage-ref/package.json || \
	  { echo 'packaging/test-clis/ccusage-ref/package.json does not pin ccusage $(CCUSAGE_VERSION) as the Makefile does'; exit 1; }
	@mkdir -p $(dir $@)
	rm -f $@
	cp packaging/test-clis/ccusage-ref/package.json packaging/test-clis/ccusage-ref/package-lock.json $(dir $@)
	cd $(dir $@) && npm ci --no-audit --no-fund
	$(dir $@)node_modules/.bin/ccusage --version
	cp packaging/test-clis/ccusage-ref/package-lock.json $@

bench-usage: $(CCUSAGE)
	$(GO) test -tags benchusage -count=1 -v -timeout 30m -run '^TestBenchUsageColdScan$$' ./sessions/claude/claudeterm/

clean:
	rm -rf bin .cache $(DIST)
