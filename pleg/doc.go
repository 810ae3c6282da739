// Package pleg is syncpod's pod lifecycle event generator ("the eyes"):
// the loop around the PLEG's deterministic core (package core), the way
// raft's Node wraps its RawNode. The PLEG owns the goroutines, timers,
// CRI calls, metrics and logs; core owns the records, the cache writes and
// the order of events.
//
// It lists the CRI runtime's syncpod-managed sandboxes and containers every
// relist period, turns the differences into lifecycle events with the
// kubelet's state table (package diff, rules ), inspects the
// pods that changed into ObservedPod statuses kept in a cache (package
// cache) and fans the events out to any number of subscribers (package
// fanout). Where the runtime offers CRI GetContainerEvents it also consumes
// that stream (package evented, rules R-14.x, which also holds the
// stream's retry loop), keeping the relist as a slow safety net. Files:
// pleg.go (options, Run, mode, health, Watch), relist.go (the global
// relist and inspections), podrelist.go (on-demand pod relists),
// stream.go (the event stream wired to the core), metrics.go.
//
// It promises: one slow or failing pod inspection never stalls the others
// (each is bounded by a timeout and they run in parallel with a limit); a
// pod whose status could not be read keeps its old record and is inspected
// again next relist, so no event is lost; the health check fails when the
// last successful relist is older than the threshold; nothing is
// dropped silently (a slow subscriber gets one RESYNC, counted).
//
// Freshness, where syncpod does better than the kubelet's evented PLEG: a
// status is current as of the relist that read it or the last runtime
// event applied to it, never as of "now because the stream is open" (the
// kubelet's 2 s timestamp bump, which served stale statuses as fresh while
// events were queued). A GetPodStatus the cache cannot answer relists that
// one pod at once. This relies on the runtime sending the events of one
// pod in the order it created them, each before it answers the CRI call
// that caused it.
//
// Relists and events agree, as package core explains: no relist
// publishes a transition older than one an event already published.
//
// Evented mode is never given up for good: after EventedMaxFailures stream
// failures in a row the PLEG relists at the normal period and retries the
// stream with a capped backoff. Routine work (relists, pod relists, status
// reads, events, container deaths) logs at DEBUG.
package pleg
