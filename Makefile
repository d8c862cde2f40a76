# cachebook — see README.md. The two commands that matter: make run, make test.
GO       ?= go
BIN      := bin/cachebook
DATA     ?= data
ROWS     ?= 2000000
ORDER    ?= shuffled
ADDR     ?= 127.0.0.1:8888

.PHONY: all build run test test-unit test-race test-wasm test-diff test-browser bench data wasm web vet fmt clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/cachebook

# Generate the demo data set if it is missing.
data: build
	@test -f $(DATA)/hits.parquet || $(BIN) gen --rows $(ROWS) --order $(ORDER) --seed 1 --out $(DATA)

# Start the notebook on generated demo data.
run: data
	$(BIN) query --data $(DATA) "SET group_by = 'naive'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 10; SET group_by = 'radix'; SELECT UserID, count(*) FROM hits GROUP BY UserID ORDER BY 2 DESC LIMIT 10"

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

test-wasm:
	GOOS=js GOARCH=wasm $(GO) build ./engine/...

test-race:
	$(GO) test -race -timeout 15m ./...

test: vet test-wasm test-race

bench: build
	$(BIN) bench --rows 20000000 --order shuffled --threads 1,2

wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w' -o web/static/cachebook.wasm ./web/wasm

clean:
	rm -rf bin
