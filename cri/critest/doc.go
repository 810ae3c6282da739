// Package critest holds the CRI test harnesses of every syncpod module.
//
// Runtime is the one in-memory CRI runtime: crisim's runtime in simulated
// mode, driven in process through the kubelet's CRI client interface (no
// socket, no gRPC), so the executor's and the PLEG's unit tests and
// syncpod-crisim share one sandbox and container state machine. Around it
// Runtime keeps what tests need: calls recorded in order and errors
// injected per method; stops in order with their grace periods and the
// configs containers were created with, for the executor's tests;
// objects put in or changed behind the runtime's back (crisim's Seed*
// and Forget); and knobs for the PLEG's (failing lists, hanging
// inspections, a GetContainerEvents stream the test feeds and can hold,
// release or fail). Images is crisim's image service, driven the same
// way, with the same record of calls and injected errors.
//
// RequireContainerd is the environment contract of tests against a real
// containerd (SYNCPOD_TEST_*, set by mk/containerd.mk).
//
// Two sub-packages serve tests against the real runtimes: containerdtest
// (the private containerd a test may use: its endpoint, the images
// imported into it, sandbox configs that send nothing off the machine)
// and ociimage (OCI image layouts built from local files, imported into
// containerd and loaded into Docker, since no registry is reachable).
package critest
