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
//	crisim     syncpod's own CRI runtime (served by syncpod-crisim): the
//	           real CRI gRPC API over host processes or simulated
//	           containers; crisim/crisimtest starts one inside any
//	           module's test, crisim/crisuite is the CRI behaviour suite
//	           it and containerd pass
//
// crisim sits here, beside the CRI edge and below the executor, the PLEG
// and the services, so that every module's tests can run against a real
// CRI endpoint (pleg's TestEventedOnCrisim does); of syncpod it imports
// only proto/fielderr and internal/promreg. The root package, crilabels,
// observe and critest depend on cri-api, cri-client, gRPC and the
// generated syncpod types only; crisim's own dependencies (Prometheus,
// procfs, a pty, cri-streaming, and client-go in its tests) are compiled
// only by what imports crisim.
//
// crisim's simulated mode is not a second in-memory fake beside critest:
// both modes share one runtime (state, name reservation, events, state
// directory), and only how a container runs differs (a host process, or a
// timer for exit-after). critest is the in-process fake of the client
// interface that unit tests drive directly.
package cri
