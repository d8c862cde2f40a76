# cachebook — see README.md. The two commands that matter: make run, make test.
GO       ?= go
BIN      := bin/cachebook
DATA     ?= data
ROWS     ?= 2000000
ORDER    ?= shuffled
ADDR     ?= 127.0.0.1:8888
NOTEBOOKS ?= notebooks
WASM     := web/static/dist/cachebook.wasm
# make fuzz: random queries against DuckDB, with a fresh seed unless given.
FUZZ_QUERIES ?= 5000
FUZZ_SEED    ?= $(shell date +%s)
# Go's runtime hands freed heap back with MADV_DONTNEED, so the next big
# query faults every 4 KiB page in again (about 20 µs each on a VM); with
# MADV_FREE the pages stay mapped until the kernel needs them. See README.
RUNENV   := GODEBUG=madvdontneed=0
# make vet-cross: the platforms vetted and built besides this one.
CROSS    ?= darwin/arm64 windows/amd64
# make dist: the release archives' platforms.
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

.PHONY: all build run query test vet vet-cross dist test-wasm test-race test-interrupt test-diff chromium axe \
	test-direction test-golden bench duckbench data wasm web screenshots fuzz clean reference

all: build

# The WebAssembly engine is embedded in the binary, so build it first.
build: wasm
	@echo "building $(BIN) (the server, the engine and the lessons in one binary)"
	$(GO) build -o $(BIN) ./cmd/cachebook

wasm:
	@echo "building the WebAssembly engine for the browser runtime ($(WASM))"
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w' -o $(WASM) ./web/wasm

# Rebuild the committed UI bundle (needs node and npm; go build does not).
web:
	cd web/ui && npm ci && node build.mjs

# Generate the demo data set if it is missing.
data: build
	@test -f $(DATA)/hits.parquet || { echo "generating $(ROWS) rows of demo data into $(DATA)/hits.parquet (once)"; $(BIN) gen --rows $(ROWS) --order $(ORDER) --seed 1 --out $(DATA); }

# Start the notebook server on the demo data; it prints the URL to open.
run: data
	$(RUNENV) $(BIN) serve --addr $(ADDR) --data $(DATA) --notebooks $(NOTEBOOKS)

# The article's query from the command line, naive and radix.
query: data
	$(RUNENV) $(BIN) query --data $(DATA) "SET group_by = 'naive'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 10; SET group_by = 'radix'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 10"

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

# macOS and Windows too: a Linux-only call outside a build tag would break
# their release archives (make dist), not this machine's build. Without cgo,
# as the archives are built (CI sets CGO_ENABLED=1 for the DuckDB module,
# which would want a C cross-compiler here).
vet-cross:
	@for t in $(CROSS); do os=$${t%/*} arch=$${t#*/}; \
		echo "GOOS=$$os GOARCH=$$arch CGO_ENABLED=0: go vet ./... && go build ./cmd/cachebook"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) vet ./... && \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -o /dev/null ./cmd/cachebook || exit 1; \
	done

# Release archives for learners without a Go toolchain: dist/cachebook-OS-ARCH
# .tar.gz (.zip for Windows) with the binary and README, and dist/SHA256SUMS.
dist: wasm
	GO=$(GO) scripts/dist.sh dist $(DIST_PLATFORMS)

test-wasm:
	GOOS=js GOARCH=wasm $(GO) build ./engine/... ./kernel/... ./web/wasm
	GOOS=js GOARCH=wasm $(GO) vet ./engine/... ./web/wasm

# Headless Chromium for the browser tests (Debian's package).
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		(echo "installing chromium for the browser tests"; (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# axe-core (npm) for the browser tests' accessibility audit (web/e2e/a11y_test.go).
axe:
	@test -f web/e2e/axe/node_modules/axe-core/axe.min.js || (cd web/e2e/axe && npm ci --no-audit --no-fund)

# go test starts packages in the order they are named, two at a time on two
# cores, and ./... names them alphabetically: the browser tests (web/e2e,
# the longest by far) would start last and run alone at the end. Naming the
# longest first lets the short ones fill the other slot around them. A
# package missing from this list still runs (./...); one listed here that
# no longer exists fails the stage, so keep the list in step with the tree.
RACE_FIRST ?= ./web/e2e ./engine ./jupyter ./engine/cachesim/trace ./cmd/cachebook ./lessons ./engine/cachesim

test-race: wasm chromium axe
	$(GO) test -race -timeout 20m $(RACE_FIRST) ./...

# Interrupt latency is asserted at 200 ms without the race detector's slowdown.
test-interrupt:
	$(GO) test -count=1 -run 'Interrupt' ./kernel/ ./web/

# Tests that assert a hardware effect's direction (a ratio with a margin)
# run without the race detector, which would time its own instrumentation,
# and one package at a time (-p 1): two threads only beat one on an idle
# second core, which another package's test binary would take.
test-direction:
	$(GO) test -count=1 -p 1 -run 'Direction' ./kernel/... ./lessons/...

# The cache model's golden results (engine/cachesim/trace), which the race
# detector makes too slow to run under test-race.
test-golden:
	$(GO) test -count=1 -run 'TestGolden' ./engine/cachesim/trace/

# DuckDB differential tests: a separate module (cgo), so the main one stays cgo-free.
test-diff:
	cd difftest && $(GO) vet ./... && $(GO) test -count=1 -timeout 15m ./...

test: vet vet-cross test-wasm test-race test-interrupt test-direction test-golden test-diff

duckbench:
	cd difftest && $(GO) build -o ../bin/duckbench ./cmd/duckbench

# Naive, radix and parallel against DuckDB on 20M generated rows (data/bench-*).
bench: build duckbench
	$(RUNENV) $(BIN) bench --rows 20000000 --order shuffled --threads 1,2 --out bench-shuffled.json
	$(RUNENV) $(BIN) bench --rows 20000000 --order clustered --threads 1,2 --out bench-clustered.json

screenshots: build chromium
	$(GO) test -count=1 ./web/e2e -args -screenshots $(CURDIR)/docs/screenshots

fuzz:
	$(GO) test -run XXX -fuzz FuzzParse -fuzztime 30s ./engine/sql
	$(GO) test -run XXX -fuzz FuzzParseDateTime -fuzztime 30s ./engine/expr
	$(GO) test -run XXX -fuzz FuzzFastRE -fuzztime 30s ./engine/expr
	$(GO) test -run XXX -fuzz 'FuzzParse$$' -fuzztime 30s ./notebook
	$(GO) test -run XXX -fuzz FuzzRoundTrip -fuzztime 30s ./notebook
	$(GO) test -run XXX -fuzz FuzzDecode -fuzztime 30s ./kernel
	$(GO) test -run XXX -fuzz FuzzMagicLine -fuzztime 30s ./notebook
	$(GO) test -run XXX -fuzz FuzzImportIpynb -fuzztime 30s ./notebook
	$(GO) test -run XXX -fuzz FuzzDecode -fuzztime 30s ./jupyter
	$(GO) test -run XXX -fuzz FuzzBundle -fuzztime 30s ./jupyter
	$(GO) test -run XXX -fuzz FuzzOpen -fuzztime 30s ./engine/storage
	$(GO) test -run XXX -fuzz FuzzSnappy -fuzztime 30s ./engine/storage
	cd difftest && $(GO) test -count=1 -timeout 60m -run TestRandom . -random $(FUZZ_QUERIES) -tlp 1000 -seed $(FUZZ_SEED)

clean:
	rm -rf bin dist $(WASM)

# Every lesson's reference outputs (lessons/reference/NAME.json), from a
# real run on this machine and the demo data; commit them with the lessons.
reference: data
	@for f in lessons/[0-9]*.md; do n=$$(basename $$f .md); echo "== $$n"; \
		$(RUNENV) $(BIN) run $$n --data $(DATA) --reference lessons/reference/$$n.json > /dev/null || echo "$$n: some cells failed (see the reference file)"; done
