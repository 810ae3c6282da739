// Package store is the planner's own database of desired pods: a bbolt file
// holding every pod a user (or a static manifest) asked for, with its latest
// status, its bounded event list, the last change set applied to it and
// its allocation (the resources the node admitted, R-25.1).
//
// # Bucket tree
//
//	meta/
//	    schema_version   -> decimal ASCII, the last migration applied
//	    node_shutdown    -> NodeShutdown (binary protobuf): the graceful node
//	                        shutdown under way or not yet recovered from
//	                        (shutdown.go); absent otherwise
//	pods/
//	    <namespace>/<name> -> PodRecord (binary protobuf, syncpod.planner.v1)
//	uids/
//	    <uid>             -> "<namespace>/<name>" (index into pods/)
//
// The pods/ key is namespace and name joined by "/" (neither may contain a
// slash: namespaces are DNS-1123 labels, names DNS-1123 subdomains). uids/ is
// kept in the same transaction as pods/, so the index never disagrees with
// the data.
//
// # Promises
//
//   - Every write is acknowledged (the method returns) only after its bbolt
//     transaction has committed; a failed commit returns an error and nothing
//     is published to watchers.
//   - Invalid pods (as judged by the injected validator) are never stored.
//   - Re-applying an identical pod writes nothing and reports UNCHANGED.
//   - A pod's allocation is decided in the transaction that stores the
//     pod (allocation.Decide, against Options.Capacity and the other
//     pods' allocations); a deferred resize is decided again in the
//     transaction that removes a pod, resizes one, or after one finishes.
//     Only a change of resources reads the other pods; the Deferred ones
//     are known from an in-memory index kept as records are written
//     (rebuilt from the file at Open and after a failed write), so a write
//     that frees room reads every record only when a resize waits.
//   - A pod sync's events, last actions and status are committed together
//     (CommitSync): one transaction, one fsync, one watch event, or
//     nothing when the commit fails. A status that differs from the
//     stored one only in updated_at is not written.
//   - Watchers see every change after its commit, in commit order. A watcher
//     whose bounded buffer is full has its queue replaced by a single RESYNC
//     event (counted in Stats) instead of blocking writers.
//   - Open never panics on a bad file and never silently starts with no
//     pods: a new file is created complete (under a temporary name, then
//     linked into place), so an existing empty file is damage; a damaged
//     file (truncated, inconsistent pages: bbolt's own check runs at Open)
//     is ErrCorrupt and a file another process holds is ErrLocked (naming
//     the holder's pid), each naming the file and what to do. Permission,
//     read-only and full-disk errors name the file too. The guarded open is
//     internal/boltfile, shared with the executor; this package gives it
//     the planner's advice (open.go).
//   - The schema version is checked at Open: migrations newer than the file
//     run in order, in one transaction; a file newer than this code is
//     refused (ErrSchemaTooNew). Versions and migrations go through
//     boltfile.Schema, as the executor's do: one encoding (decimal) and
//     one way to migrate for every syncpod database.
//
// ConfigMaps and Secrets live in their own buckets beside the pods
// (config.go documents them); they are created on first write, so they
// need no migration.
//
// Time comes from an injected clock, so records are deterministic in tests.
package store
