// Package cache is the PLEG's observed-status cache: the latest ObservedPod
// of every pod with the time it is current as of, plus a global timestamp
// saying "every pod's cached status, and every pod's absence, is current as
// of then" (rule R-13.5). GetNewerThan is the kubelet's "newer than" wait:
// it blocks until the cache can answer for a pod with a status current
// after a given instant. Waiters are woken by a broadcast on every change,
// never by polling.
//
// A status is replaced whole (Set, a relist's inspection) or changed in
// place by a Delta (Apply, one runtime event): Apply costs O(objects in the
// delta), not O(objects in the pod), so a backlog of events about a pod of
// thousands of containers drains fast; the ObservedPod a reader gets is
// built once per change, when it is read. A pod found absent by a
// single-pod relist is remembered as absent as of that relist (a
// tombstone), so newer-than waits for it are answered without a global
// relist.
//
// Stored and returned statuses are never modified: callers must not modify
// what they pass in or get back.
package cache
