# Kubernetes control plane for the node-agent end-to-end test
# (TestKubernetesNodesJoinAndRunPods in services/e2e).
#
#   make k8s-deps   install Debian's etcd-server when etcd is missing (root
#                   only, no service started: mk/etcd-deps.sh) and build
#                   kube-apiserver, kubectl, kube-scheduler and
#                   kube-controller-manager (the scheduler test's) once
#                   per version into the cache outside the clone
#                   (mk/k8sbin.sh), so that on a new machine their build
#                   is part of the set-up, not hidden in a test's time
#
# The test starts etcd and kube-apiserver itself, on loopback ports with a
# private data dir and certificates it makes, and stops them by pid.

# Required (a control plane that cannot start is a FAIL, not a skip) in CI
# and as root, where k8s-deps provides it.
ifneq ($(filter true 1 yes,$(CI))$(filter 0,$(shell id -u)),)
export SYNCPOD_TEST_REQUIRE_K8S ?= 1
endif

.PHONY: k8s-deps

k8s-deps:
	@mk/etcd-deps.sh
	@GO=$(GO) mk/k8sbin.sh kube-apiserver kubectl kube-scheduler kube-controller-manager >/dev/null

test-setup:: k8s-deps
