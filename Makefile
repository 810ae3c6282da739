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
MODULES   := proto internal cri planner executor pleg node services bench
PKGS      := $(addprefix ./,$(addsuffix /...,$(MODULES)))
LDFLAGS   := -s -w -X github.com/syncpod/syncpod/services/server/access.Version=$(VERSION)
# Two build configurations, so a fresh machine compiles the dependency
# graph twice at most: -race for the tests and vet, and static -trimpath
# for what users run (`make build`, `make run`, the images, the Go tools),
# which is also what the end-to-end tests start (the node agent aside:
# see services/e2e/binaries_test.go).
STATIC_GO := CGO_ENABLED=0 $(GO)
# The static build's tags, written once in mk/static-tags (what each is
# for is said there), comma-separated for -tags.
STATIC_TAGS := $(shell sed 's/\#.*//' mk/static-tags | xargs | tr ' ' ',')
# The images: the services, and syncpodctl for compose's one-shot `certs`.
BINARIES  := syncpod-planner syncpod-executor syncpod-pleg syncpod-crisim syncpodctl
# What `make run` needs (the services and the CLI of the README's session).
# Built on their own, they leave the node agent's client-go out of the
# static build that `make test` compiles (the end-to-end tests build the
# node agent with -race, whose client-go its unit tests compile anyway).
RUN_BINARIES := $(BINARIES)

# Pinned tool versions.
BUF_VERSION                := v1.75.0
# sha512 of the npm tarball @bufbuild/buf-linux-x64@1.75.0 (npm view ... dist.integrity).
BUF_NPM_INTEGRITY          := sha512-YGGJAx0lpMCE7aMWjNOJcfoEaG/e+iYHnTC4SZ0P5eS4IffMryA9Z4/bb1m1wNXAEJ8ATFMEZOAk/5x9VE47ig==
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPCURL_VERSION            := v1.9.3
GOLANGCI_LINT_VERSION      := v2.15.0

BUF                := $(BIN)/buf
PROTOC_GEN_GO      := $(BIN)/protoc-gen-go
PROTOC_GEN_GO_GRPC := $(BIN)/protoc-gen-go-grpc
GRPCURL            := $(BIN)/grpcurl
GOLANGCI_LINT      := $(BIN)/golangci-lint

export PATH := $(BIN):$(PATH)

-include mk/*.mk

.PHONY: build build-run build-images test test-setup test-teardown unit check fuzz lint generate check-generated run bench bench-go images clean tools

## build: static binaries (every services/cmd/*) into bin/
build:
	$(STATIC_GO) build -trimpath -tags '$(STATIC_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/ ./services/cmd/...

# build-run, build-images: only what `make run` or the images need.
build-run:
	$(STATIC_GO) build -trimpath -tags '$(STATIC_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./services/cmd/,$(RUN_BINARIES))
build-images:
	$(STATIC_GO) build -trimpath -tags '$(STATIC_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./services/cmd/,$(BINARIES))

## test: the whole suite (lint, generated code, every module with -race,
## the bounded fuzzing, the tests against containerd 2.x)
# On a fresh machine most of the time is compiling, and the set-up mostly
# waits (downloads, starting containerd): lint runs beside it, with its own
# log; either failing fails the target. (A plain background job, not make
# -j with --output-sync: the daemons the set-up starts would inherit make's
# output lock and hold it for ever.) vet compiles in the unit tests' build
# configuration (-race), so the dependency graph it compiles is the one the
# unit tests reuse. The fuzzing (its own instrumented build, then CPU)
# starts as soon as the set-up is done and runs beside lint and the unit
# tests; each fuzz target runs for a number of inputs, not a time, so a
# busy CPU makes it slower, never failed. The extra runs (unit-extra: the
# containerd tests against 2.x, on a runtime of their own) start in whichever lane
# frees first, the fuzzing's or the unit tests', and never before lint is
# done (so they reuse its -race compile of their dependencies rather than
# compiling them a second time beside it). Every lane keeps the machine's
# two cores busy until the end: the run is as long as its CPU.
# Each phase's end is printed with the seconds since the start.
LINT_LOG  := $(CURDIR)/.tmp/lint.log
FUZZ_LOG  := $(CURDIR)/.tmp/fuzz.log
EXTRA_LOG := $(CURDIR)/.tmp/unit-extra.log
# The conformance subset (mk/conformance.mk) mostly waits on its cluster
# and pods: it runs in a lane of its own from the end of the set-up.
CONF_LOG  := $(CURDIR)/.tmp/conformance-subset.log
test:
	@mkdir -p $(dir $(LINT_LOG)) && rm -f $(FUZZ_LOG) $(EXTRA_LOG) $(CONF_LOG)
	start=$$(date +%s); since() { echo "$$(( $$(date +%s) - start )) s"; }; \
	$(MAKE) --no-print-directory lint-and-generated > $(LINT_LOG) 2>&1 & lint=$$!; \
	rc=0; $(MAKE) test-setup || rc=$$?; \
	echo "== set-up done (exit $$rc) at $$(since) =="; \
	fuzz=; conf=; if [ $$rc -eq 0 ]; then \
	  { frc=0; $(MAKE) --no-print-directory fuzz > $(FUZZ_LOG) 2>&1 || frc=$$?; echo "fuzzing done at $$(since)" >> $(FUZZ_LOG); exit $$frc; } & fuzz=$$!; \
	  { crc=0; $(MAKE) --no-print-directory conformance-subset > $(CONF_LOG) 2>&1 || crc=$$?; echo "conformance subset done at $$(since)" >> $(CONF_LOG); exit $$crc; } & conf=$$!; \
	fi; \
	lrc=0; wait $$lint || lrc=$$?; \
	echo "== lint and generated code (ran beside the set-up; exit $$lrc; log $(LINT_LOG)) done at $$(since) =="; \
	cat $(LINT_LOG); \
	if [ $$rc -eq 0 ] && [ $$lrc -eq 0 ]; then \
	  { urc=0; $(MAKE) unit || urc=$$?; echo "== unit tests done (exit $$urc) at $$(since) =="; exit $$urc; } & unit=$$!; \
	  while kill -0 $$unit 2>/dev/null && kill -0 $$fuzz 2>/dev/null; do sleep 1; done; \
	  urc=; if ! kill -0 $$unit 2>/dev/null; then urc=0; wait $$unit || urc=$$?; fi; \
	  erc=0; if [ "$${urc:-0}" -eq 0 ]; then \
	    $(MAKE) --no-print-directory unit-extra > $(EXTRA_LOG) 2>&1 || erc=$$?; \
	    echo "== the extra runs done (exit $$erc; log $(EXTRA_LOG)) at $$(since) =="; \
	  else echo "== the extra runs skipped: the unit tests had failed =="; fi; \
	  if [ -z "$$urc" ]; then wait $$unit || rc=1; elif [ $$urc -ne 0 ]; then rc=1; fi; \
	  [ $$erc -eq 0 ] || rc=1; \
	else rc=1; fi; \
	if [ -n "$$fuzz" ]; then \
	  frc=0; wait $$fuzz || frc=$$?; \
	  echo "== $$(tail -n 1 $(FUZZ_LOG)) (it began when the set-up ended; exit $$frc; log $(FUZZ_LOG)) =="; \
	  cat $(FUZZ_LOG); [ $$frc -eq 0 ] || rc=1; \
	fi; \
	cat $(EXTRA_LOG) 2>/dev/null || true; \
	if [ -n "$$conf" ]; then \
	  crc=0; wait $$conf || crc=$$?; \
	  echo "== $$(tail -n 1 $(CONF_LOG)) (it began when the set-up ended; exit $$crc; log $(CONF_LOG)) =="; \
	  cat $(CONF_LOG); [ $$crc -eq 0 ] || rc=1; \
	fi; \
	$(MAKE) test-teardown; echo "== make test: exit $$rc after $$(since) =="; exit $$rc
	@$(MAKE) --no-print-directory test-summary

.PHONY: lint-and-generated
lint-and-generated: lint check-generated

# Tests that inject faults, floods or bad input record their counts with
# internal/testsummary into this file; `make test` prints it, since go test
# shows nothing of a passing package but its "ok" line.
TEST_SUMMARY := $(CURDIR)/.tmp/test-summary.txt
export SYNCPOD_TEST_SUMMARY := $(TEST_SUMMARY)

# The end-to-end package first: it runs longest (mostly waiting on the
# services it starts), so it starts as soon as it is built and the rest
# compile and run beside it; -p 4 on 2 cores, because a test binary that
# waits holds one of go test's slots. -parallel 6: the end-to-end tests
# mostly wait on the services, runtimes and control planes they start, and
# two at a time (the default on 2 cores) left the machine idle for
# minutes. -ldflags=-w: no DWARF in the 50 test binaries (a fifth less
# linking; stack traces and race reports do not use it). -vet=off: lint
# has vetted every package with all of vet's checks, a superset of go
# test's; its own pass would vet the dependencies again.
UNIT_PKGS := ./services/e2e $(PKGS)
unit:
	@mkdir -p $(dir $(TEST_SUMMARY)) && : > $(TEST_SUMMARY)
	$(GO) test -race -ldflags=-w -vet=off -shuffle=on -p 4 -parallel 6 -timeout 20m $(UNIT_PKGS)

.PHONY: test-summary
test-summary:
	@n=$$(cat $(TEST_SUMMARY) 2>/dev/null | wc -l); \
	echo "== what the fault, flood and bad-input tests did ($$n lines, from $(TEST_SUMMARY)) =="; \
	sort $(TEST_SUMMARY) 2>/dev/null || true

## check: lint and the unit tests (-race) of every package but the
## end-to-end one, in minutes, without root or any set-up; what needs root
## or a real containerd, dockerd or API server skips, saying why
# The set-up's runtimes are left out even when they are running, and none
# is required (mk/*.mk requires them as root and in CI, where `make test`
# starts them), so the lane is the same on every machine.
E2E_PKG   := github.com/syncpod/syncpod/services/e2e
CHECK_ENV := SYNCPOD_TEST_CONTAINERD_ENDPOINT= SYNCPOD_TEST_NODE_CONTAINERD_ENDPOINT= \
             SYNCPOD_TEST_REQUIRE_CONTAINERD= SYNCPOD_TEST_REQUIRE_DOCKER= \
             SYNCPOD_TEST_REQUIRE_K8S= SYNCPOD_TEST_REQUIRE_PROMETHEUS= SYNCPOD_TEST_REQUIRE_DBUS=
check: lint
	@mkdir -p $(dir $(TEST_SUMMARY)) && : > $(TEST_SUMMARY)
	pkgs=$$($(GO) list $(PKGS) | grep -vx '$(E2E_PKG)'); \
	env $(CHECK_ENV) $(GO) test -race -ldflags=-w -vet=off -shuffle=on -timeout 10m $$pkgs

# Fuzz targets for everything that parses or judges user input (their
# seed corpora also run in every `make unit`), each for a number of inputs
# (a few seconds of fuzzing each, plus its link) or, with FUZZTIME=30s, for
# a time. `make lint` fails when a `func Fuzz...` is missing here
# (mk/fuzzcheck.sh).
FUZZTIME     ?=
FUZZ_TARGETS := ./proto/validation:FuzzPod:5000x ./executor/validate:FuzzApplyActions:20000x \
                ./planner/manifest:FuzzParse:100x ./planner/plan:FuzzPlanJSON:15000x \
                ./planner/plan:FuzzPlan:15000x ./executor/expansion:FuzzExpand:50000x \
                ./executor/crilog:FuzzParser:15000x \
                ./services/ctl/cliargs:FuzzParsePorts:10000x ./services/ctl/cliargs:FuzzParseWaitFor:10000x \
                ./services/ctl/cliargs:FuzzParseOutput:10000x \
                ./node/logquery:FuzzParseLogQuery:15000x \
                ./planner/evictionplan:FuzzParse:8000x

## fuzz: every fuzz target (FUZZ_TARGETS) for its count of inputs (or FUZZTIME each)
fuzz:
	for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$(if $(FUZZTIME),$(FUZZTIME),$${rest#*:}); \
	  echo "fuzz $$pkg $$name for $$n"; \
	  $(GO) test -vet=off -run '^$$' -fuzz "^$$name\$$" -fuzztime=$$n "$$pkg"; \
	done

# Hooks for mk/*.mk fragments: start and stop what the tests need. The
# static binaries of `make run` and the images are built here, beside lint,
# so the tests that run `make run` or `make images` side by side do not
# each compile them.
test-setup:: build-run
test-teardown::
	@true
# Further test runs after `make unit` (e.g. the containerd tests against 2.x).
unit-extra::
	@true

## lint: gofmt, go.mod and go.sum tidy, FUZZ_TARGETS naming every fuzz
## target, go vet (in the tests' -race configuration), golangci-lint
## (.golangci.yml: what the pure cores may import and call), buf lint and
## buf format
# golangci-lint reads the dependencies' export data from the go command
# (go list -export): with -race it is the data vet has just compiled,
# where a configuration of its own would compile the whole graph again.
lint: $(BUF) $(GOLANGCI_LINT)
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "$$m/go.mod or go.sum is not tidy: run go mod tidy in $$m"; exit 1; }; done
	@mk/fuzzcheck.sh $(FUZZ_TARGETS)
	$(GO) vet -race $(PKGS)
	GOFLAGS="$$($(GO) env GOFLAGS) -race" $(GOLANGCI_LINT) run $(PKGS)
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
run: build-run $(GRPCURL)
	SYNCPOD_RUN_PARENT=$$PPID deploy/run-local.sh $(BIN)

## bench-go: Go benchmarks of every module (make bench: see mk/bench.mk)
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## images: container images (FROM scratch) for docker compose, and Debian's
## Prometheus as syncpod/prometheus:debian; needs a Docker engine (DOCKER_HOST)
images: build-images
	mk/images.sh $(BIN) $(VERSION) $(REVISION) $(BINARIES)

## tools: the pinned Go tools
tools: $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC) $(GRPCURL) $(GOLANGCI_LINT)

# Prebuilt from the npm registry, integrity-checked (go install as a fallback).
$(BUF):
	GO=$(GO) mk/buf.sh $@ $(BUF_VERSION) $(BUF_NPM_INTEGRITY)
# Built once per version into the cache outside the clone (mk/gotool.sh),
# then copied: they are pinned third-party tools, not syncpod's code.
$(PROTOC_GEN_GO):
	GO=$(GO) mk/gotool.sh $@ google.golang.org/protobuf/cmd/protoc-gen-go $(PROTOC_GEN_GO_VERSION)
$(PROTOC_GEN_GO_GRPC):
	GO=$(GO) mk/gotool.sh $@ google.golang.org/grpc/cmd/protoc-gen-go-grpc $(PROTOC_GEN_GO_GRPC_VERSION)
$(GRPCURL):
	GO=$(GO) mk/gotool.sh $@ github.com/fullstorydev/grpcurl/cmd/grpcurl $(GRPCURL_VERSION)
$(GOLANGCI_LINT):
	GO=$(GO) mk/gotool.sh $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(GOLANGCI_LINT_VERSION)

## clean: remove build output (private engines under .tmp are stopped first,
## so nothing is removed through their mounts)
clean: dockerd-down containerd-down
	rm -rf --one-file-system $(BIN) dist .tmp
