// Package cri is syncpod's edge to a CRI runtime, shared by the executor,
// the PLEG and their tests.
//
// The root package is the connection: Conn dials an endpoint (unix:///path)
// with the kubelet's own remote client (k8s.io/cri-client) on first use, so
// a service can start, and answer Unavailable, before its runtime is up.
// A failed dial is retried at most once per RetryInterval; until it
// succeeds every call fails with an error that is ErrUnavailable for
// errors.Is and codes.Unavailable for gRPC. Observer is the read-only view
// of the runtime the PLEG relists and watches, over the same connection;
// a Conn made WithListCodec sends the Observer's two list calls through
// that codec, over a second connection (the remote client takes no gRPC
// options).
//
// Sub-packages, importing in one direction:
//
//	crilabels  the label and annotation keys syncpod writes on CRI objects
//	observe    CRI statuses -> ObservedPod (and relist grouping by pod)
//	listcodec  gRPC's protobuf codec with caches for the two list answers
//	           a PLEG asks for every relist: decoded items kept by their
//	           encoding (syncpod-pleg's Conn, WithListCodec), and
//	           encodings kept by item for a runtime that keeps its list
//	           items (the servers of syncpod-crisim and crisimtest); used
//	           only where passed, never registered with gRPC
//	crisim     syncpod's own CRI runtime (served by syncpod-crisim): the
//	           real CRI gRPC API over host processes or simulated
//	           containers; crisim/crisimtest starts one inside any
//	           module's test, crisim/crisuite is the CRI behaviour suite
//	           it and containerd pass
//	critest    the one in-memory CRI runtime every module's tests use
//	           (crisim's, simulated, driven in process), and the
//	           environment contract of tests against a real containerd
//
// crisim sits here, beside the CRI edge and below the executor, the PLEG
// and the services, so that every module's tests can run against it: over
// a real CRI endpoint (crisimtest; pleg's TestEventedOnCrisim), or in
// process through critest. Of syncpod it imports only proto/fielderr and
// internal/promreg. The root package, crilabels and observe depend on
// cri-api, cri-client, gRPC and the generated syncpod types only;
// crisim's own dependencies (Prometheus, procfs, a pty, cri-streaming)
// are compiled only by what imports crisim or critest: syncpod-crisim
// and tests.
//
// There is one sandbox and container state machine: crisim's. Its
// process and simulated modes differ only in how a container runs (a
// host process, or a timer for exit-after); critest is its in-process
// face with the recording and fault-injection knobs unit tests need,
// and adds no state of its own about sandboxes or containers.
package cri
