// Package backoff is the executor's crash-loop back-off store, persisted in
// bbolt so that a crash loop keeps its delay across executor restarts (the
// kubelet forgets it; docs/design.md). It is the only package that opens the
// executor's database, so it also keeps the user namespace ranges of pods
// (AllocateUserNamespace), which must outlive restarts too.
//
// Semantics are those of client-go's flowcontrol.Backoff as the kubelet uses
// it (rules ), keyed by (pod uid, container name, spec
// hash) so a changed spec starts a fresh back-off:
//
//   - Check(key, exitedAt): unknown or expired entry → not in back-off;
//     otherwise in back-off while now − exitedAt < delay.
//   - Next(key, exitedAt): unknown or expired → delay = initial; else
//     delay = min(2 × delay, max). last_update = now (the clock), not
//     exitedAt.
//   - An entry is expired when the instant it is compared at (exitedAt for
//     Check/Next, now for GC) is more than ResetAfter (600 s) after its
//     last update, whatever the maximum delay: the kubelet fixes it at
//     ten minutes rather than client-go's 2 × max.
//   - GC drops expired entries; it runs on Open and periodically from Run.
//
// Every write is committed (bbolt fsync) before the method returns.
//
// Open never panics on a bad file and never silently starts afresh: a new
// file is created complete (under a temporary name, linked into place), so
// an existing empty file is damage; a damaged file (truncated, inconsistent
// pages, undecodable records: bbolt's own check runs at open) is ErrCorrupt
// and a file another process holds is ErrLocked (naming the holder's pid),
// each naming the file and what to do. Permission, read-only and full-disk
// errors name the file too. The guarded open is internal/boltfile, shared
// with the planner; this package gives it the executor's advice (open.go).
//
// # Bucket tree
//
//	meta/
//	    schema_version    → decimal ASCII, the last migration applied (current:
//	                        SchemaVersion; version 1 files held a big-endian uint64)
//	backoff/
//	    <pod uid>/        (one bucket per pod)
//	        <container name> 0x00 <spec hash> → JSON record
//	            {"delay_ns","last_update_ns","held_until_ns","pod_name","pod_namespace"}
//	userns/
//	    <pod uid>         → decimal ASCII, the first host ID of the pod's
//	                        user namespace (userns.go, R-27.2)
//
// Migrations are ordered and run in one transaction on Open by
// boltfile.Schema; each migration must have a test (migrate_test.go
// enforces it).
package backoff
