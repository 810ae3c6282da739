// Package cache is the PLEG's observed-status cache: the latest ObservedPod
// of every pod with the time it was read, plus a global timestamp saying
// "every pod not in the cache was absent from the runtime as of then"
// (rule ). GetNewerThan is the kubelet's "newer than" wait: it blocks
// until the cache can answer for a pod with a status read after a given
// instant. Waiters are woken by a broadcast on every change, never by
// polling. Stored statuses are never modified: callers must not modify what
// they pass in or get back.
package cache
