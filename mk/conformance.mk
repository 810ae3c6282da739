# The upstream Kubernetes [sig-node] [Conformance] specs against a one-node
# cluster in private namespaces (mk/conformance.sh; root).
#
#   make conformance          syncpod as the node: cluster up, the parallel
#                             pass (3 ginkgo processes), the serial specs
#                             alone, everything torn down
#   make conformance CONFORMANCE_NODE=kubelet   the kubelet of the same release
#   make conformance CONFORMANCE_RUNTIME=containerd   Debian's containerd 1.6
#                             instead of 2.4
#   make conformance-images   the test images only (.tmp/conformance-images)
#   make conformance-report   docs/conformance.md from the last syncpod and
#                             kubelet runs' reports
#   make conformance-down     tear down a cluster left up (mk/conformance.sh up)
#
# The first run builds e2e.test (tens of CPU minutes, at nice 19), ginkgo,
# agnhost and the Kubernetes components into the cache outside the clone
# (mk/k8sbin.sh). The syncpod and kubelet runs keep their reports apart:
# .tmp/conformance-<node>/reports/<node>/{parallel,serial}.json.

CONFORMANCE_NODE    ?= syncpod
CONFORMANCE_RUNTIME ?= containerd2
CONFORMANCE_IMAGES  ?= $(CURDIR)/.tmp/conformance-images
conformance_dir      = $(CURDIR)/.tmp/conformance-$(1)
conformance_env      = CONFORMANCE_NODE=$(1) CONFORMANCE_RUNTIME=$(CONFORMANCE_RUNTIME) \
	CONFORMANCE_IMAGES=$(CONFORMANCE_IMAGES) CONFORMANCE_DIR=$(call conformance_dir,$(1)) GO=$(GO)

.PHONY: conformance conformance-images conformance-report conformance-down

conformance: conformance-images
	$(call conformance_env,$(CONFORMANCE_NODE)) mk/conformance.sh all

conformance-images:
	GO=$(GO) mk/conformance-images.sh $(CONFORMANCE_IMAGES)

conformance-report:
	cd bench && $(GO) run ./cmd/syncpod-bench conformance \
		--kubelet $$(ls $(call conformance_dir,kubelet)/reports/kubelet/*.json | paste -sd,) \
		--syncpod $$(ls $(call conformance_dir,syncpod)/reports/syncpod/*.json | paste -sd,) \
		--out $(CURDIR)/docs/conformance.md

conformance-down:
	$(call conformance_env,$(CONFORMANCE_NODE)) mk/conformance.sh down
