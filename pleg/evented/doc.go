// Package evented consumes the CRI container-event stream
// (GetContainerEvents) for the PLEG: Consume runs one stream, and Apply
// turns one event into a cache update and lifecycle events with the
// kubelet's evented rules: events without sandbox
// status are ignored; STOPPED is CONTAINER_DIED, STARTED is
// CONTAINER_STARTED, CREATED only updates the cache, DELETED is
// CONTAINER_DIED + CONTAINER_REMOVED and is always forwarded; other events
// update the cache only when newer than its entry and are forwarded only
// when the cache took them. The choice between evented and relist mode,
// failure counting and fallback live in package pleg.
package evented
