# syncpod build. Every tool the targets need is installed by the targets
# themselves (Go tools into ./bin with pinned versions; Debian packages with
# apt-get when running as root), so `make test` works on a fresh machine.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO        ?= go
BIN       := $(CURDIR)/bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
MODULES   := proto internal cri planner executor pleg services
PKGS      := $(addprefix ./,$(addsuffix /...,$(MODULES)))
LDFLAGS   := -s -w -X github.com/syncpod/syncpod/services/server.Version=$(VERSION)
# One way to compile for everything but the -race tests (vet, binaries,
# tools, the e2e suite's binaries): static and -trimpath, so a fresh
# machine compiles the dependency graph twice (plain and race), not three
# or four times.
STATIC_GO := CGO_ENABLED=0 $(GO)
BINARIES  := syncpod-planner syncpod-executor syncpod-pleg syncpod-crisim

# Pinned tool versions.
BUF_VERSION                := v1.75.0
# sha512 of the npm tarball @bufbuild/buf-linux-x64@1.75.0 (npm view ... dist.integrity).
BUF_NPM_INTEGRITY          := sha512-YGGJAx0lpMCE7aMWjNOJcfoEaG/e+iYHnTC4SZ0P5eS4IffMryA9Z4/bb1m1wNXAEJ8ATFMEZOAk/5x9VE47ig==
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPCURL_VERSION            := v1.9.3

BUF                := $(BIN)/buf
PROTOC_GEN_GO      := $(BIN)/protoc-gen-go
PROTOC_GEN_GO_GRPC := $(BIN)/protoc-gen-go-grpc
GRPCURL            := $(BIN)/grpcurl

export PATH := $(BIN):$(PATH)

-include mk/*.mk

.PHONY: build test test-setup test-teardown unit fuzz lint generate check-generated run bench bench-go images clean tools

## build: static binaries (every services/cmd/*) into bin/
build:
	$(STATIC_GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./services/cmd/...

## test: the whole suite (lint, generated code, every module with -race,
## the bounded fuzzing, the tests against containerd 2.x)
# On a fresh machine most of the time is compiling, and the set-up mostly
# waits (downloads, starting containerd): lint runs beside it, with its own
# log; either failing fails the target. (A plain background job, not make
# -j with --output-sync: the daemons the set-up starts would inherit make's
# output lock and hold it for ever.) The fuzzing runs after the unit tests,
# not beside them: starved of CPU by the -race build, a time-bounded fuzz
# run fails with "context deadline exceeded".
LINT_LOG := $(CURDIR)/.tmp/lint.log
test:
	@mkdir -p $(dir $(LINT_LOG))
	$(MAKE) --no-print-directory lint-and-generated > $(LINT_LOG) 2>&1 & lint=$$!; \
	rc=0; $(MAKE) test-setup || rc=$$?; \
	lrc=0; wait $$lint || lrc=$$?; \
	echo "== lint and generated code (ran beside the set-up; exit $$lrc; log $(LINT_LOG)) =="; \
	cat $(LINT_LOG); \
	if [ $$rc -eq 0 ] && [ $$lrc -eq 0 ]; then \
	  $(MAKE) unit-and-fuzz || rc=$$?; $(MAKE) unit-extra || rc=$$?; \
	else rc=1; fi; \
	$(MAKE) test-teardown; exit $$rc
	@$(MAKE) --no-print-directory test-summary

.PHONY: lint-and-generated unit-and-fuzz
lint-and-generated: lint check-generated

unit-and-fuzz:
	rc=0; $(MAKE) unit || rc=$$?; $(MAKE) fuzz || rc=$$?; exit $$rc

# Tests that inject faults, floods or bad input record their counts with
# internal/testsummary into this file; `make test` prints it, since go test
# shows nothing of a passing package but its "ok" line.
TEST_SUMMARY := $(CURDIR)/.tmp/test-summary.txt
export SYNCPOD_TEST_SUMMARY := $(TEST_SUMMARY)

unit:
	@mkdir -p $(dir $(TEST_SUMMARY)) && : > $(TEST_SUMMARY)
	$(GO) test -race -shuffle=on -timeout 20m $(PKGS)

.PHONY: test-summary
test-summary:
	@n=$$(cat $(TEST_SUMMARY) 2>/dev/null | wc -l); \
	echo "== what the fault, flood and bad-input tests did ($$n lines, from $(TEST_SUMMARY)) =="; \
	sort $(TEST_SUMMARY) 2>/dev/null || true

# Fuzz targets for everything that parses or judges user input, each run
# for FUZZTIME (their seed corpora also run in every `make unit`).
FUZZTIME     ?= 5s
FUZZ_TARGETS := ./proto/validation:FuzzPod ./executor/validate:FuzzApplyActions \
                ./planner/manifest:FuzzParse ./planner/plan:FuzzPlanJSON

## fuzz: every fuzz target for FUZZTIME (5s) each
fuzz:
	for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $$t for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t##*:}\$$" -fuzztime=$(FUZZTIME) "$${t%%:*}"; \
	done

# Hooks for mk/*.mk fragments: start and stop what the tests need.
test-setup::
	@true
test-teardown::
	@true
# Further test runs after `make unit` (e.g. the containerd 2.x subset).
unit-extra::
	@true

## lint: gofmt, go vet, buf lint and buf format
lint: $(BUF)
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATIC_GO) vet -trimpath $(PKGS)
	$(BUF) lint
	$(BUF) format --diff --exit-code

## generate: regenerate the protobuf Go code with the pinned plugins
generate: $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC)
	$(BUF) generate

## check-generated: fail when the committed generated code is stale
check-generated: $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC)
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(BUF) generate --output "$$tmp"; \
	(cd "$$tmp/proto" && find . -name '*.pb.go' | sort) > "$$tmp/want"; \
	(cd proto && find . -name '*.pb.go' | sort) > "$$tmp/have"; \
	diff -u "$$tmp/have" "$$tmp/want" || { echo "generated files differ: run make generate"; exit 1; }; \
	while read -r f; do cmp -s "$$tmp/proto/$$f" "proto/$$f" || { echo "proto/$$f is stale: run make generate"; exit 1; }; done < "$$tmp/want"; \
	echo "generated code is up to date"

## run: build and start every service in the foreground (Ctrl-C stops all);
## grpcurl is installed too, for the README's session
# run-local.sh watches make (SYNCPOD_RUN_PARENT): GNU make passes SIGTERM to
# its recipe but waits on SIGINT without passing it on.
run: build $(GRPCURL)
	SYNCPOD_RUN_PARENT=$$PPID deploy/run-local.sh $(BIN)

## bench-go: Go benchmarks of every module (make bench: see mk/bench.mk)
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## images: container images (FROM scratch) for docker compose, and Debian's
## Prometheus as syncpod/prometheus:debian; needs a Docker engine (DOCKER_HOST)
images: build
	mk/images.sh $(BIN) $(VERSION) $(REVISION) $(BINARIES)

## tools: the pinned Go tools
tools: $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC) $(GRPCURL)

# Prebuilt from the npm registry, integrity-checked (go install as a fallback).
$(BUF):
	GO=$(GO) mk/buf.sh $@ $(BUF_VERSION) $(BUF_NPM_INTEGRITY)
$(PROTOC_GEN_GO):
	GOBIN=$(BIN) $(STATIC_GO) install -trimpath google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(PROTOC_GEN_GO_GRPC):
	GOBIN=$(BIN) $(STATIC_GO) install -trimpath google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(GRPCURL):
	GOBIN=$(BIN) $(STATIC_GO) install -trimpath github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)

## clean: remove build output (private engines under .tmp are stopped first,
## so nothing is removed through their mounts)
clean: dockerd-down containerd-down
	rm -rf --one-file-system $(BIN) dist .tmp
