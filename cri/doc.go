// Package cri is syncpod's edge to a CRI runtime, shared by the executor,
// the PLEG and their tests.
//
// The root package is the connection: Conn dials an endpoint (unix:///path)
// with the kubelet's own remote client (k8s.io/cri-client) on first use, so
// a service can start, and answer Unavailable, before its runtime is up.
// A failed dial is retried at most once per RetryInterval; until it
// succeeds every call fails with an error that is ErrUnavailable for
// errors.Is and codes.Unavailable for gRPC. Observer is the read-only view
// of the runtime the PLEG relists and watches, over the same connection.
//
// Sub-packages, importing in one direction:
//
//	crilabels  the label and annotation keys syncpod writes on CRI objects
//	observe    CRI statuses -> ObservedPod (and relist grouping by pod)
//	critest    the one in-memory CRI runtime every module's tests use, and
//	           the environment contract of tests against a real containerd
//
// The module depends on cri-api, cri-client, gRPC and the generated
// syncpod types only (no client-go), so importing it keeps builds small.
package cri
