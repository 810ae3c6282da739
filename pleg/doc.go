// Package pleg is syncpod's pod lifecycle event generator ("the eyes"). It
// lists the CRI runtime's syncpod-managed sandboxes and containers every
// relist period, turns the differences into lifecycle events with the
// kubelet's state table (package diff, rules ), inspects the
// pods that changed into ObservedPod statuses kept in a cache (package
// cache) and fans the events out to any number of subscribers (package
// fanout). Where the runtime offers CRI GetContainerEvents it also consumes
// that stream (package evented, rules R-14.x), keeping the relist as a slow
// safety net.
//
// It promises: one slow or failing pod inspection never stalls the others
// (each is bounded by a timeout and they run in parallel with a limit); a
// pod whose status could not be read keeps its old record and is inspected
// again next relist, so no event is lost; the health check fails when the
// last successful relist is older than the threshold; nothing is
// dropped silently (a slow subscriber gets one RESYNC, counted).
package pleg
