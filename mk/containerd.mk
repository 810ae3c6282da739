# Real containerd for the integration tests (see mk/containerd.md).
#
#   make containerd-deps     apt-get install the Debian packages when missing (root only)
#   make containerd-images   OCI image tarballs built locally from busybox-static
#   make containerd-up       private containerd under .tmp/containerd/, images imported
#   make containerd-down     stop it, kill its shims and containers, unmount, remove state
#   make containerd-status   exit 0 when it answers
#
# `make test` runs deps, images and up before `make unit`, and down after.

CONTAINERD_DIR      := $(CURDIR)/.tmp/containerd
CONTAINERD_IMAGES   := $(CURDIR)/.tmp/images
CONTAINERD_SH       := $(CURDIR)/mk/containerd.sh
MKIMAGE             := $(BIN)/syncpod-mkimage
MKIMAGE_SRCS        := $(wildcard services/cmd/syncpod-mkimage/*.go cri/critest/ociimage/*.go)
# Tarballs are named after the image, so another name means another file.
image_tar = $(CONTAINERD_IMAGES)/$(subst :,_,$(subst /,_,$(1))).tar
HOST_BUSYBOX        := /bin/busybox

# The environment contract of the containerd tests (cri/critest/containerdtest).
# `?=` lets a caller point the tests at another containerd.
export SYNCPOD_TEST_CONTAINERD_ENDPOINT ?= unix://$(CONTAINERD_DIR)/containerd.sock
export SYNCPOD_TEST_PAUSE_IMAGE         ?= localhost/syncpod/pause:3.10
export SYNCPOD_TEST_BUSYBOX_IMAGE       ?= localhost/syncpod/busybox:1.36
# Required (unreachable containerd = FAIL, not skip) in CI and as root, where
# the targets above can always provide it.
ifneq ($(filter true 1 yes,$(CI))$(filter 0,$(shell id -u)),)
export SYNCPOD_TEST_REQUIRE_CONTAINERD ?= 1
# The planner's logind test on a private dbus-daemon, which containerd-deps
# installs with the rest: a daemon that cannot start fails it there.
export SYNCPOD_TEST_REQUIRE_DBUS ?= 1
endif

PAUSE_IMAGE_TAR     := $(call image_tar,$(SYNCPOD_TEST_PAUSE_IMAGE))
BUSYBOX_IMAGE_TAR   := $(call image_tar,$(SYNCPOD_TEST_BUSYBOX_IMAGE))

.PHONY: containerd-deps containerd-images containerd-up containerd-down containerd-status

containerd-deps:
	@$(CONTAINERD_SH) deps

# Images need busybox-static, hence deps first. Checked in the recipe, not
# with $(wildcard), because deps may have installed it a moment ago.
containerd-images: containerd-deps
	@if [ -e $(HOST_BUSYBOX) ]; then \
		$(MAKE) --no-print-directory $(PAUSE_IMAGE_TAR) $(BUSYBOX_IMAGE_TAR); \
	else \
		echo "containerd-harness: $(HOST_BUSYBOX) missing (apt-get install busybox-static): no images, containerd tests will SKIP" >&2; \
	fi

$(MKIMAGE): $(MKIMAGE_SRCS) services/go.mod
	$(STATIC_GO) build -trimpath -o $@ ./services/cmd/syncpod-mkimage

$(PAUSE_IMAGE_TAR): $(MKIMAGE) $(HOST_BUSYBOX)
	@mkdir -p $(@D)
	$(MKIMAGE) -kind pause -name $(SYNCPOD_TEST_PAUSE_IMAGE) -busybox $(HOST_BUSYBOX) -out $@

$(BUSYBOX_IMAGE_TAR): $(MKIMAGE) $(HOST_BUSYBOX)
	@mkdir -p $(@D)
	$(MKIMAGE) -kind busybox -name $(SYNCPOD_TEST_BUSYBOX_IMAGE) -busybox $(HOST_BUSYBOX) -out $@

containerd-up: containerd-images
	@$(CONTAINERD_SH) up $(CONTAINERD_DIR) $(SYNCPOD_TEST_PAUSE_IMAGE) $(SYNCPOD_TEST_BUSYBOX_IMAGE) $(PAUSE_IMAGE_TAR) $(BUSYBOX_IMAGE_TAR)

containerd-down:
	@$(CONTAINERD_SH) down $(CONTAINERD_DIR)

containerd-status:
	@$(CONTAINERD_SH) status $(CONTAINERD_DIR)

test-setup:: containerd-deps containerd-images containerd-up
test-teardown:: containerd-down

# A second containerd 1.6 for the end-to-end tests that run a whole syncpod
# node on containerd (cri/critest/containerdtest.NodeEndpoint): a node kills
# the pods it does not know, as the kubelet does, so on the containerd the
# other packages' tests share it would take their pods for orphans. These
# tests take turns on this one (a lock in services/e2e), beside the rest.
CONTAINERD_NODE_DIR := $(CURDIR)/.tmp/containerd-node
export SYNCPOD_TEST_NODE_CONTAINERD_ENDPOINT ?= unix://$(CONTAINERD_NODE_DIR)/containerd.sock

.PHONY: containerd-node-up containerd-node-down
containerd-node-up: containerd-images
	@$(CONTAINERD_SH) up $(CONTAINERD_NODE_DIR) $(SYNCPOD_TEST_PAUSE_IMAGE) $(SYNCPOD_TEST_BUSYBOX_IMAGE) $(PAUSE_IMAGE_TAR) $(BUSYBOX_IMAGE_TAR)

containerd-node-down:
	@$(CONTAINERD_SH) down $(CONTAINERD_NODE_DIR)

test-setup:: containerd-node-up
test-teardown:: containerd-node-down

# containerd 2.x, the second real runtime: it has CRI GetContainerEvents, so
# the PLEG runs evented on it. mk/containerdbin.sh builds containerd, its runc
# shim and ctr from the Go module proxy once per version into a cache outside
# the clone (/var/cache/syncpod/containerd/<version>); later runs reuse it.
#
#   make containerd2-build   build (once; a few minutes, reported on its own)
#   make containerd2-up      private instance under .tmp/containerd2/ (version-3 config)
#   make containerd2-down    stop it, as containerd-down does
#   make unit-containerd2    the containerd tests below against it, PLEG evented
#
# `make test` runs the whole suite against Debian's 1.6 (PLEG relist) and
# UNIT_CONTAINERD2 against 2.x.
#
# Beside Debian's runc, the 2.x instance has a runtime handler runc-userns
# running a runc with idmapped mounts, which Debian's 1.1 lacks:
# mk/runcbin.sh builds it once per version, like containerd, into
# /var/cache/syncpod/runc/<version>. The pods in user namespaces of their
# own (hostUsers: false, R-27) run on it; SYNCPOD_TEST_CONTAINERD_USERNS_HANDLER
# names it to the tests, which then fail rather than skip when it cannot
# run them (unless the kernel has no idmapped overlay mounts).
CONTAINERD2_VERSION ?= v2.4.2
CONTAINERD2_DIR     := $(CURDIR)/.tmp/containerd2
CONTAINERDBIN_SH    := $(CURDIR)/mk/containerdbin.sh
RUNC_VERSION        ?= v1.5.3
RUNCBIN_SH          := $(CURDIR)/mk/runcbin.sh
# What the 1.6 run expects of the PLEG (asserted by the tests that start one).
export SYNCPOD_TEST_CONTAINERD_PLEG_MODE ?= relist
# Every containerd test of `make unit` runs on 2.x as well: the harness
# smoke test, the PLEG's died event and health (asserting evented mode),
# the executor's runner (security context, volumes, hooks, crash-loop
# backoff, grace periods), the CRI suite (which asks the runtime for its
# events and checks them, sandboxes included), and the end-to-end tests
# through all three services (lifecycle, streams, the site example,
# security and hooks, each asserting evented mode) with the SIGKILL of a
# private 2.x containerd under a churn of pods. The first four share the
# runtime and run side by side; the end-to-end ones (UNIT_CONTAINERD2_NODE)
# run after them, taking turns on the runtime (a lock in services/e2e),
# since a node kills the pods it does not know, as the kubelet does, and
# this runtime has no second instance for nodes.
UNIT_CONTAINERD2      := ./cri/critest/containerdtest:. ./pleg/service:TestContainerd \
                         ./executor/runner:TestContainerd ./cri/crisim:TestCRISuiteContainerd
UNIT_CONTAINERD2_NODE := ./services/e2e:'OnContainerd|TestRuntimeFaultContainerd'

.PHONY: containerd2-build containerd2-up containerd2-down unit-containerd2

containerd2-build:
	@if [ "$$(id -u)" -ne 0 ]; then echo "containerd-harness: not root: no containerd $(CONTAINERD2_VERSION) (its tests will SKIP)" >&2; exit 0; fi; \
	if dir=$$(CONTAINERD2_VERSION=$(CONTAINERD2_VERSION) $(CONTAINERDBIN_SH) --cached 2>/dev/null); then \
	  echo "containerd-harness: containerd $(CONTAINERD2_VERSION) cached in $$dir"; \
	else \
	  echo "containerd-harness: building containerd $(CONTAINERD2_VERSION) once (not part of the test time; cached outside the clone)"; \
	  start=$$(date +%s); CONTAINERD2_VERSION=$(CONTAINERD2_VERSION) $(CONTAINERDBIN_SH) >/dev/null || exit 1; \
	  echo "containerd-harness: one-time build of containerd $(CONTAINERD2_VERSION): $$(( $$(date +%s) - start )) s"; \
	fi; \
	if r=$$(RUNC_VERSION=$(RUNC_VERSION) $(RUNCBIN_SH) --cached 2>/dev/null); then \
	  echo "containerd-harness: runc $(RUNC_VERSION) cached at $$r"; \
	else \
	  echo "containerd-harness: building runc $(RUNC_VERSION) once (not part of the test time; cached outside the clone)"; \
	  start=$$(date +%s); RUNC_VERSION=$(RUNC_VERSION) $(RUNCBIN_SH) >/dev/null || exit 1; \
	  echo "containerd-harness: one-time build of runc $(RUNC_VERSION): $$(( $$(date +%s) - start )) s"; \
	fi

containerd2-up: containerd-images containerd2-build
	@if [ "$$(id -u)" -ne 0 ]; then exit 0; fi; \
	bin=$$(CONTAINERD2_VERSION=$(CONTAINERD2_VERSION) $(CONTAINERDBIN_SH) --cached); \
	runc=$$(RUNC_VERSION=$(RUNC_VERSION) $(RUNCBIN_SH) --cached); \
	SYNCPOD_CONTAINERD_BIN=$$bin SYNCPOD_CONTAINERD_USERNS_RUNC=$$runc $(CONTAINERD_SH) up $(CONTAINERD2_DIR) $(SYNCPOD_TEST_PAUSE_IMAGE) $(SYNCPOD_TEST_BUSYBOX_IMAGE) $(PAUSE_IMAGE_TAR) $(BUSYBOX_IMAGE_TAR)

containerd2-down:
	@bin=$$(CONTAINERD2_VERSION=$(CONTAINERD2_VERSION) $(CONTAINERDBIN_SH) --cached 2>/dev/null || true); \
	SYNCPOD_CONTAINERD_BIN=$$bin $(CONTAINERD_SH) down $(CONTAINERD2_DIR)

unit-containerd2:
	@if [ "$$(id -u)" -ne 0 ] && [ ! -S $(CONTAINERD2_DIR)/containerd.sock ]; then \
	  echo "!!! SKIP containerd $(CONTAINERD2_VERSION) tests: not root and no $(CONTAINERD2_DIR)/containerd.sock"; exit 0; fi; \
	start=$$(date +%s); logs=$$(mktemp -d); trap 'rm -rf "$$logs"' EXIT; \
	bin=$$(CONTAINERD2_VERSION=$(CONTAINERD2_VERSION) $(CONTAINERDBIN_SH) --cached 2>/dev/null || true); \
	run() { SYNCPOD_TEST_CONTAINERD_ENDPOINT=unix://$(CONTAINERD2_DIR)/containerd.sock SYNCPOD_TEST_NODE_CONTAINERD_ENDPOINT= SYNCPOD_TEST_CONTAINERD_PLEG_MODE=evented \
	    SYNCPOD_TEST_CONTAINERD_USERNS_HANDLER=runc-userns SYNCPOD_CONTAINERD_BIN=$$bin \
	    $(GO) test -race -ldflags=-w -vet=off -count=1 -timeout 10m -run "$${1##*:}" "$${1%%:*}"; }; \
	i=0; pids=; for t in $(UNIT_CONTAINERD2); do \
	  i=$$((i + 1)); run "$$t" > "$$logs/$$i" 2>&1 & pids="$$pids $$!"; \
	done; \
	rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	cat "$$logs"/*; [ $$rc -eq 0 ] || exit 1; \
	for t in $(UNIT_CONTAINERD2_NODE); do run "$$t" || exit 1; done; \
	echo "containerd $(CONTAINERD2_VERSION) tests: $$(( $$(date +%s) - start )) s"

test-setup:: containerd2-up
test-teardown:: containerd2-down
unit-extra:: unit-containerd2
