// Package wake turns containerd's own event service into wake-ups for the
// relist PLEG. containerd serves its native Events service on the
// socket that serves CRI, containerd 1.6 included, which offers no CRI
// container events; a task's exit, start, OOM or deletion in the CRI
// namespace then wakes a relist at once, and the relist stays the only
// source of truth: nothing of an envelope but its namespace and topic is
// read. A runtime without the service (crisim, CRI-O) answers
// Unimplemented.
//
// The package holds the subscription only; the PLEG (package pleg, wake.go)
// keeps it open, retries it and chooses the period.
package wake
