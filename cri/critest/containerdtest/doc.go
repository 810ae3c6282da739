// Package containerdtest connects tests in every module to the real
// containerd that `make containerd-up` (and `make test`) starts under
// .tmp/containerd/. See mk/containerd.md.
//
// The environment contract, exported by mk/containerd.mk to `make unit` and
// written to .tmp/containerd/env for running tests by hand:
//
//	SYNCPOD_TEST_CONTAINERD_ENDPOINT  unix:///abs/path/.tmp/containerd/containerd.sock
//	SYNCPOD_TEST_PAUSE_IMAGE          localhost/syncpod/pause:3.10 (sandbox image)
//	SYNCPOD_TEST_BUSYBOX_IMAGE        localhost/syncpod/busybox:1.36 (Cmd ["sh"])
//	SYNCPOD_TEST_REQUIRE_CONTAINERD   "1": an unreachable containerd fails the
//	                                  test; otherwise it skips, loudly
//	SYNCPOD_TEST_CONTAINERD_PLEG_MODE "relist" or "evented": the mode a PLEG
//	                                  must reach on this runtime (unset: not
//	                                  checked); see ExpectedPLEGMode
//	SYNCPOD_TEST_CONTAINERD_USERNS_HANDLER
//	                                  the runtime handler that runs pods in
//	                                  user namespaces of their own (unset:
//	                                  none is expected); see
//	                                  UserNamespaceHandler
//
// The runtime is Debian's containerd 1.6 (CRI v1, no GetContainerEvents:
// Unimplemented, so the PLEG relists; no CRI list streaming), or, in
// `make unit-containerd2`, containerd 2.x built by mk/containerdbin.sh
// (GetContainerEvents works: the PLEG runs evented). Tests must use
// host-network sandboxes only (but for pods in user namespaces of their
// own, on the handler above, whose network is an address in the pod's
// namespace and nothing more), never pull (no registry is reachable), and
// never send traffic to pod IPs.
//
// It promises: Endpoint returns only after the runtime answered CRI Version;
// everything RunHostNetworkSandbox creates is removed by t.Cleanup, even when
// the test fails.
package containerdtest
