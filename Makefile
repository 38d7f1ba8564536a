GO        ?= go
BIN       ?= bin/lockledger
PKGS      := ./...

.PHONY: build test vet demo bench pgbouncer crossbuild stress stress-archive fuzz jepsen lint clean docs-screenshot man release version

# The version and commit go into the binary from git (see lockledger
# --version): the toolchain's own stamp is missing under -buildvcs=false
# and in a git worktree. The version is the release tag at HEAD, else a Go
# pseudo-version (scripts/version.sh). Evaluated only by the targets that build.
CLIPKG        := github.com/lockledger/lockledger/cli
GIT_COMMIT     = $(shell git rev-parse HEAD 2>/dev/null)
GIT_MODIFIED   = $(shell if [ -n "$$(git status --porcelain 2>/dev/null)" ]; then echo true; else echo false; fi)
GIT_VERSION    = $(shell bash scripts/version.sh 2>/dev/null)
VERSION_FLAGS  = $(if $(GIT_COMMIT),-X $(CLIPKG).buildCommit=$(GIT_COMMIT) -X $(CLIPKG).buildModified=$(GIT_MODIFIED)) \
                 $(if $(GIT_VERSION),-X $(CLIPKG).buildVersion=$(GIT_VERSION))
# A static binary; a test builds with BUILD_CGO=1 BUILDFLAGS=-race to reuse its own compiled packages.
BUILD_CGO     ?= 0
BUILDFLAGS    ?=

build:
	CGO_ENABLED=$(BUILD_CGO) $(GO) build $(BUILDFLAGS) -ldflags '$(strip $(VERSION_FLAGS))' -o $(BIN) .

## version: the version make build stamps (a release tag, else a pseudo-version)
version:
	@bash scripts/version.sh

## release: static binaries for PLATFORMS, each packed with LICENSE, README, docs/, man pages and shell completions, into dist/ with SHA256SUMS
# macOS binaries are cross-compiled and cannot be run here (docs/macos.md says what differs there).
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release: build man
	GO='$(GO)' BIN='$(BIN)' VERSION='$(GIT_VERSION)' LDFLAGS='$(strip $(VERSION_FLAGS))' bash scripts/release.sh $(PLATFORMS)

## test: every package vetted with all of go vet's checks and tested (unit and end-to-end; e2e's own code without it) under the race detector, and beside them the schema's differential corpus and its fuzz seeds without it (-race slows them 14x)
# SQLite's C translated to Go (modernc.org/sqlite/lib), and the C library and
# allocator it runs on (modernc.org/libc, modernc.org/memory), are not our
# code: make test leaves them out of the race detector's instrumentation
# (and so out of its pointer checks, -d=checkptr), which makes every
# statement about 7x slower, and the C library's part another fifth of a
# package's CPU; make stress instruments them too.
# The CLI the tests run is built once here, static as make build builds it,
# rather than once by each test package (LOCKLEDGER_TEST_CLI, internal/clitest).
# e2e's own code is the tests' (the race detector doubled its CPU): it runs
# beside the other packages without -race, and its tests of the CLI's
# concurrent parts (clitest.Race) run a CLI built with -race. It and the
# schema's corpus are built static, as the CLI is, whose compiled packages
# they share.
RACE_TEST := -race -gcflags='modernc.org/sqlite/lib=-race=false' -gcflags='modernc.org/libc/...=-race=false' -gcflags='modernc.org/memory=-race=false'
CORPUS    := -run '^(TestFastMatchesSchema|FuzzFastMatchesSchema)$$'
# go test vets each package with every check go vet runs (-vet=all) on the
# packages it compiled for the test, rather than go vet compiling them once
# more. The builds of make test carry no DWARF, compiled or linked, and no
# symbol table (-s, which implies -w; a quarter of each link's CPU) (GOFLAGS,
# so that a build a test runs shares them): a race report's and a panic's
# file:line come from the binary's own line table.
TEST_GOFLAGS := -ldflags=-s -gcflags=github.com/lockledger/...=-dwarf=false
# The tests' temporary files (each t.TempDir, the throwaway PostgreSQL
# cluster) and go test's builds go to a directory of their own on a tmpfs
# where /dev/shm is one that can run programs and has room (scripts/test-tmpdir.sh),
# removed when make test ends: the same files, fsyncs and renames, without
# the disk work, which was most of the tests' system CPU.
# The bound of a test binary that hangs, far above an idle machine's time:
# at a load of 40 on two cores e2e's tests take over 20 minutes.
TEST_TIMEOUT ?= 45m
# The unit packages whose tests take longest (most of it waiting: on
# PostgreSQL, on Chromium, on one another's locks) start first: go test
# runs two packages at a time in the order named, and a long one left to
# the end runs alone on an otherwise idle machine. For the same reason the
# schema's corpus runs beside them rather than after them.
SLOW_FIRST := ./ledger/ ./timeline/ ./replay/ ./metrics/ ./cli/auditcmd/ ./archive/ ./lease/ ./store/
test:
	@bash scripts/test-tools.sh
	@export GOFLAGS="$$GOFLAGS $(TEST_GOFLAGS)" && echo "GOFLAGS=$$GOFLAGS" && \
	tmp=$$(bash scripts/test-tmpdir.sh) && trap 'rm -rf "$$tmp"' EXIT && export TMPDIR="$$tmp" && echo "TMPDIR=$$TMPDIR" && \
	cli="$$tmp/cli" && mkdir -p "$$cli/race" && \
	CGO_ENABLED=0 $(GO) build -buildvcs=false -o "$$cli/lockledger" . && \
	$(GO) build -buildvcs=false $(RACE_TEST) -o "$$cli/race/lockledger" . && \
	export LOCKLEDGER_TEST_CLI="$$cli/lockledger" LOCKLEDGER_TEST_RACE_CLI="$$cli/race/lockledger" && \
	echo "LOCKLEDGER_TEST_CLI=$$LOCKLEDGER_TEST_CLI LOCKLEDGER_TEST_RACE_CLI=$$LOCKLEDGER_TEST_RACE_CLI" && \
	echo "CGO_ENABLED=0 $(GO) test -vet=all -count=1 -timeout $(TEST_TIMEOUT) ./e2e/ & CGO_ENABLED=0 $(GO) test -vet=off -count=1 $(CORPUS) ./schema/ & $(GO) test -vet=all $(RACE_TEST) -count=1 -timeout $(TEST_TIMEOUT) (every other package, the slowest first)" && \
	{ CGO_ENABLED=0 $(GO) test -vet=all -count=1 -timeout $(TEST_TIMEOUT) ./e2e/ & e2e=$$!; \
	  CGO_ENABLED=0 $(GO) test -vet=off -count=1 -timeout $(TEST_TIMEOUT) $(CORPUS) ./schema/ & corpus=$$!; \
	  $(GO) test -vet=all $(RACE_TEST) -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list $(SLOW_FIRST) $(PKGS) | grep -v '/e2e$$'); units=$$?; \
	  wait $$e2e; e2e=$$?; wait $$corpus; corpus=$$?; [ $$e2e -eq 0 ] && [ $$corpus -eq 0 ] && [ $$units -eq 0 ]; }

vet:
	$(GO) vet $(PKGS)

## demo: build, then a scripted tour on a throwaway root; stdout is the transcript (make demo > tour.txt), the build's lines go to stderr
demo:
	@$(MAKE) --no-print-directory build >&2
	@bash scripts/demo.sh $(BIN)

## docs-screenshot: write the 25-second incident of docs/timeline.md, draw its timeline page with the CLI, check it in headless chromium at 1400x900 and photograph it into docs/timeline.png
docs-screenshot:
	LOCKLEDGER_SCREENSHOT=$(CURDIR)/docs/timeline.png $(GO) test -count=1 -run '^TestIncidentPageInChromium$$' ./timeline/

## bench: build, then measure the CLI against the floor of our own stack (internal/cmd/floor) and flock(1), the library against the raw commit rate, sqlite3 on a 1,000,000-event ledger, each audit read at 1M and 10M events (ledgers generated once and kept in LOCKLEDGER_BENCH_CACHE, default ~/.cache/lockledger-bench) and PostgreSQL (a throwaway cluster); BASELINE=BIN also measures the CLI against an earlier build, alternated
BASELINE ?=
bench: build
	$(GO) run ./internal/cmd/bench -bin $(BIN) $(if $(BASELINE),-baseline $(BASELINE))

## pgbouncer: the whole PostgreSQL conformance suite through PgBouncer in transaction pooling mode (make test runs a part of it there)
pgbouncer:
	LOCKLEDGER_PGBOUNCER=only $(GO) test -count=1 -run 'TestConformance|TestHostIDCollision|TestHolderOfAnUnknownMachine|TestHoldingsShowEverySharedHolder|TestPgBouncer' ./ledger/

## crossbuild: the darwin/arm64 build and vet of every package with macOS files (run by .ci/run after make test)
crossbuild:
	LOCKLEDGER_CROSSBUILD=1 $(GO) test -count=1 -run '^TestBuildsForMacOS$$' .

## stress: the crash and contention suites, and the large ledger's verify, at full size (longer than make test)
stress:
	LOCKLEDGER_STRESS=1 $(GO) test -race -count=1 -timeout 30m -run 'Crash|Contention|Stress|ManyRunWaiters|KilledMidTransaction|LargeLedger' ./e2e/

## stress-archive: archive and prune a ledger of 200k events on SQLite and PostgreSQL (sizes and times in the log)
stress-archive:
	LOCKLEDGER_STRESS=1 $(GO) test -count=1 -timeout 30m -v -run 'TestArchivePrune' ./archive/

## jepsen: the fault harness (internal/jepsen; not part of make test): 8 clients on 2-4 simulated hosts loop `lockledger run` while a nemesis kills, pauses or cuts off the holder, on SQLite and PostgreSQL; prints a table per fault class and store and how long it took, exits 1 when a check failed. JEPSEN_FLAGS sizes it (the default: at least 200 take-over trials per pause fault per store, -parallel 4 trials at once; -duration 1m per class is a quick look)
JEPSEN_FLAGS ?= -store both -trials 200 -takeovers 200 -parallel 4
jepsen:
	$(GO) run ./internal/cmd/jepsen $(JEPSEN_FLAGS)

## fuzz: each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

## lint: go.mod and go.sum tidy, gofmt, go vet and staticcheck on every package (not part of make test; docs/contributing.md)
# staticcheck is run at a fixed version rather than required in go.mod, so
# the product's module graph stays what it links.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: vet
	@tidy=$$($(GO) mod tidy -diff) || { echo "go mod tidy would change go.mod or go.sum:"; echo "$$tidy"; exit 1; }
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(STATICCHECK) $(PKGS)

## man: one man page per command into man/man1, generated from the commands (not committed); view with man -l man/man1/lockledger-acquire.1
man:
	rm -rf man/man1
	$(GO) run ./internal/cmd/mangen -dir man/man1

clean:
	rm -rf bin man dist
