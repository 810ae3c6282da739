# The upstream Kubernetes [sig-node] [Conformance] specs against a one-node
# cluster in private namespaces (mk/conformance.sh; root).
#
#   make conformance          syncpod as the node: cluster up, the parallel
#                             pass (3 ginkgo processes), the serial specs
#                             alone, everything torn down
#   make conformance CONFORMANCE_NODE=kubelet   the kubelet of the same release
#   make conformance CONFORMANCE_RUNTIME=containerd   Debian's containerd 1.6
#                             instead of 2.4
#   make conformance CONFORMANCE_FEATURES=1   also the specs beyond
#                             conformance of the features syncpod implements:
#                             every [Feature:UserNamespacesSupport] spec and
#                             every [sig-node] ImageVolume one
#                             (CONFORMANCE_FEATURE_FOCUS), in the parallel
#                             pass; their results are in the same reports
#   make conformance-images   the test images only (kept outside the clone,
#                             in /var/cache/syncpod/conformance-images)
#   make conformance-report   docs/conformance.md from the last runs' reports
#                             (each node on each runtime that has run)
#   make conformance-down     tear down a cluster left up (mk/conformance.sh up)
#   make conformance-subset   a few specs for each behaviour the suite once
#                             found missing, against a syncpod node; fails
#                             when one fails (a lane of make test, from the
#                             end of its set-up)
#
# The cluster serves the test images at localhost:5000 (the names the
# suite is given) from a registry inside its namespace, so specs that pull
# find them too (mk/conformance.sh).
#
# The first run builds e2e.test (tens of CPU minutes, at nice 19), ginkgo,
# agnhost and the Kubernetes components into the cache outside the clone
# (mk/k8sbin.sh). The syncpod and kubelet runs keep their reports apart:
# .tmp/conformance-<node>/reports/<node>/{parallel,serial}.json.

CONFORMANCE_NODE    ?= syncpod
CONFORMANCE_RUNTIME ?= containerd2
# The test images are made once per version of what makes them (their
# script, the image builder, the busybox build) and kept outside the
# clone, as the Kubernetes binaries are: a fresh clone reuses them.
CONFORMANCE_IMAGES_KEY = $(shell cat mk/conformance-images.sh mk/busyboxbin.sh services/cmd/syncpod-mkimage/*.go | sha256sum | cut -c1-16)
CONFORMANCE_IMAGES  ?= $(shell . mk/cachedir.sh && cache_dir conformance-images)/$(CONFORMANCE_IMAGES_KEY)
# One directory per node and runtime: .tmp/conformance-syncpod,
# .tmp/conformance-kubelet, and -1.6 after them for containerd 1.6.
conformance_dir      = $(CURDIR)/.tmp/conformance-$(1)$(if $(filter containerd,$(CONFORMANCE_RUNTIME)),-1.6)
conformance_env      = CONFORMANCE_NODE=$(1) CONFORMANCE_RUNTIME=$(CONFORMANCE_RUNTIME) \
	CONFORMANCE_IMAGES=$(CONFORMANCE_IMAGES) CONFORMANCE_DIR=$(call conformance_dir,$(1)) GO=$(GO) \
	$(if $(filter 1,$(CONFORMANCE_FEATURES)),CONFORMANCE_FEATURE_FOCUS='$(CONFORMANCE_FEATURE_FOCUS)')
# The feature specs (ginkgo focus, added to CONFORMANCE_FOCUS or its
# default) that CONFORMANCE_FEATURES=1 runs beside conformance: user
# namespaces (pod.spec.hostUsers: false) and image volumes.
CONFORMANCE_FEATURES ?= 0
CONFORMANCE_FEATURE_FOCUS := \[Feature:UserNamespacesSupport\]|\[sig-node\] ImageVolume

.PHONY: conformance conformance-images conformance-report conformance-down conformance-subset conformance-deps

conformance: conformance-images
	$(call conformance_env,$(CONFORMANCE_NODE)) mk/conformance.sh all

conformance-images:
	GO=$(GO) mk/conformance-images.sh $(CONFORMANCE_IMAGES)

# Every run there is, in this order; a spec failing on all of them is
# explained by CONFORMANCE_WHY.
CONFORMANCE_WHY := --why 'ImageVolume=it pulls its image with pull policy Always and mounts it as a volume: it fails where the runtime or the node mounts no image volumes (containerd 1.6 has none), and in a run whose cluster has no registry at localhost:5000 (mk/conformance.sh serves the test images there)'
conformance-report:
	args=(); for run in "kubelet, containerd 2.4:kubelet:" "syncpod, containerd 2.4:syncpod:" \
	  "kubelet, containerd 1.6:kubelet:-1.6" "syncpod, containerd 1.6:syncpod:-1.6"; do \
	  IFS=: read -r name node suffix <<<"$$run"; \
	  files=$$(ls $(CURDIR)/.tmp/conformance-$$node$$suffix/reports/$$node/*.json 2>/dev/null | paste -sd, || true); \
	  [ -n "$$files" ] && args+=(--node "$$name=$$files"); \
	done; \
	[ $${#args[@]} -gt 0 ] || { echo "no conformance reports under .tmp/conformance-*: run make conformance first"; exit 1; }; \
	cd bench && $(GO) run ./cmd/syncpod-bench conformance "$${args[@]}" $(CONFORMANCE_WHY) --out $(CURDIR)/docs/conformance.md

conformance-down:
	$(call conformance_env,$(CONFORMANCE_NODE)) mk/conformance.sh down

# The subset: one or two specs for each behaviour a syncpod node once
# lacked: pod names past 63 characters, activeDeadlineSeconds updates,
# subPathExpr and its errors, envFrom prefixes, ephemeral containers, gRPC
# probes, observedGeneration, Service variables, preStop httpGet at kill
# time, a preStop reaching another pod (tokens, in-cluster config), the
# read-only root filesystem, spec.overhead, and in-place resize (spec.os).
CONFORMANCE_SUBSET := termination message from log output if TerminationMessagePolicy FallbackToLogsOnError is set|\
Pods should allow activeDeadlineSeconds to be updated|\
Variable Expansion should allow substituting values in a volume subpath|\
Variable Expansion should fail substituting values in a volume subpath with backticks|\
ConfigMap should be consumable as environment variable names with various prefixes|\
Ephemeral Containers will start an ephemeral container in an existing pod|\
Probing container should be restarted with a GRPC liveness probe|\
Pod Generation pod generation should start at 1 and increment per update|\
Pods should contain environment variables for services|\
should execute prestop http hook properly|\
PreStop should call prestop when killing a pod|\
read only busybox container should not write to root filesystem|\
RuntimeClass should schedule a Pod requesting a RuntimeClass and initialize its Overhead|\
Pod InPlace Resize Container resize pod via the replace endpoint

conformance-subset: conformance-images
	CONFORMANCE_NODE=syncpod CONFORMANCE_RUNTIME=containerd2 CONFORMANCE_IMAGES=$(CONFORMANCE_IMAGES) \
	CONFORMANCE_DIR=$(call conformance_dir,subset) GO=$(GO) CONFORMANCE_SERIAL=0 CONFORMANCE_STRICT=1 \
	CONFORMANCE_FOCUS='$(CONFORMANCE_SUBSET)' mk/conformance.sh all

# What the suite needs built once (e2e.test, ginkgo, agnhost): in make
# test's set-up, so that on a new machine the build is part of it, not
# hidden in the subset's time.
conformance-deps:
	@GO=$(GO) mk/k8sbin.sh e2e.test ginkgo agnhost >/dev/null

test-setup:: conformance-deps
