# svclab build, test and run targets. Every install step the project needs
# lives here or in .ci/run, so a fresh machine needs nothing done by hand.

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
BIN := $(CURDIR)/bin
TOOLS := $(BIN)/tools
VENV := $(CURDIR)/.venv
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2

.PHONY: all build test test-go test-py lint bench proto venv quickstart replicate clean

all: build

## build: compile the svclab binary into bin/svclab
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/svclab ./cmd/svclab

## venv: the analysis package in its own virtualenv (.venv)
venv: $(VENV)/.installed
$(VENV)/.installed: analysis/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e 'analysis[test]'
	touch $@

## lint: gofmt, go vet and ruff
lint: venv
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(VENV)/bin/ruff check analysis

## test: every test, Go and Python
test: build venv lint test-go test-py

# -p 1: the load generator's accuracy tests and the end-to-end tests measure
# time on a 2-core machine, so packages run one at a time.
test-go: build
	SVCLAB_BIN=$(BIN)/svclab SVCLAB_VENV=$(VENV) $(GO) test -p 1 -count=1 -timeout 30m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzLoadTable$$' -fuzztime 5s ./internal/load
	SVCLAB_BIN=$(BIN)/svclab $(GO) test -run '^$$' -fuzz '^FuzzLoadFlags$$' -fuzztime 5s ./cmd/svclab

test-py: venv build
	cd analysis && SVCLAB_BIN=$(BIN)/svclab $(VENV)/bin/pytest -q

## bench: Go benchmarks and the comparisons against peer tools (docs/PERFORMANCE.md)
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	@for s in scripts/bench/*.sh; do [ -e "$$s" ] || continue; echo "== $$s"; bash "$$s" || exit 1; done

## proto: regenerate the Go code from proto/ and apps/*/ .proto files
proto:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	$(GO) build -o $(TOOLS)/protoc-gen-go-svclab ./cmd/protoc-gen-go-svclab
	PATH=$(TOOLS):$$PATH $(TOOLS)/buf generate

## quickstart: build everything, run experiments/quickstart.toml, print the report path
quickstart: build venv
	$(BIN)/svclab run experiments/quickstart.toml

## replicate: run every replication spec and regenerate docs/REPLICATIONS.md (about an hour)
replicate: build venv
	bash scripts/replicate.sh

clean:
	rm -rf $(BIN) $(VENV) results
