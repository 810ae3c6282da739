// Package events records kubelet-style events about pods.
//
// Events are aggregated like the kubelet's event correlator: a repeat of the
// same (type, reason, message, involved container) for the same pod bumps
// count and last_time of the existing entry instead of adding a new one.
// Lists are kept ordered by last_time (oldest first, a repeated event moves
// to the end) and bounded per pod: when full, the least recently seen event
// is dropped.
//
// Everything here is deterministic: time comes from the caller (an argument
// or an injected clock) and no function mutates its arguments.
//
// FromApplyResult derives the kubelet's events (Pulled, Created, Started,
// Killing, BackOff, SandboxChanged, FailedCreatePodSandBox, Failed, ...) from
// one executor ApplyActions response.
package events
