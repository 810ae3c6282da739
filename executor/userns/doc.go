// Package userns is the node's range of host user and group IDs for pods
// in their own user namespace (host_users false, R-27): the range the
// kubelet would use (the subordinate IDs of the "kubelet" user, else every
// ID from 65536 up), its checks, and the CRI user namespace of a pod given
// the first host ID the executor's store allocated it.
//
// The allocation itself, persisted so that a restart never hands one
// range to two pods, is the executor's store (executor/backoff).
package userns
