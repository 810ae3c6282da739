// Package core is the PLEG's deterministic core: what the PLEG last saw
// of every pod (package diff's records), the observed-status cache
// (package cache), the pods to inspect again, and when runtime events
// last told about each object. A relist's listings, a pod's inspection
// and a batch of runtime events are applied to a State, which updates the
// cache and the records and hands the lifecycle events to publish, in
// order, to the Publish function it was built with.
//
// It does no I/O, starts no goroutine and reads no clock: the caller (the
// package pleg loop) lists and inspects the runtime, runs the event
// stream (package evented), passes the times in, and records metrics and
// logs from what each call returns. A State is safe for concurrent use:
// one mutex, never held across anything but Publish, orders what relists
// and events do to a pod.
//
// Relists and events agree: an event updates the diff records as well as
// the cache, and a relist's picture, which dates from its start, gives
// way for every object an event told about after that start (R-13.4,
// R-14.x). So a relist never publishes a transition older than one an
// event already published, nor publishes an event's transition again.
package core
