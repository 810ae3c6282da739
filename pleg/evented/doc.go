// Package evented is everything about the CRI container-event stream
// (GetContainerEvents) for the PLEG: Stream keeps it open with the PLEG's
// retry policy (confirmation, failure counting, capped backoff), Consume
// runs one stream and hands the events over in batches (whatever is
// queued, so a backlog drains in few large steps), Decode turns one event
// into a Change, and Apply applies a
// Change to the cache with the kubelet's evented rules:
// events without sandbox status are ignored; STOPPED is CONTAINER_DIED,
// STARTED is CONTAINER_STARTED, CREATED only updates the cache, DELETED is
// CONTAINER_DIED + CONTAINER_REMOVED and is always forwarded; other events
// update the cache only when newer than its entry and are forwarded only
// when the cache took them.
//
// Where syncpod differs from the kubelet on purpose: an event's container
// statuses are merged into the cached pod by container id, never taken as
// the sandbox's complete list. containerd sends every container of the
// sandbox with each event, crisim only the one the event is about (events
// would otherwise grow with the square of a sandbox's size); both work,
// and applying an event costs O(statuses in it). Removals come from
// DELETED events, and the relist, the safety net, reconciles any other.
// Stream reports a confirmed stream and each end through hooks; the PLEG's
// mode, metrics and forced relists are package pleg's, and the records
// an event updates are package core's.
package evented
