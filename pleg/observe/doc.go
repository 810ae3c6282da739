// Package observe converts what the CRI runtime reports (list results,
// sandbox and container statuses, container events) into the PLEG's pod
// records (package diff) and syncpod ObservedPod statuses, reading back the
// labels and annotations the executor wrote (package crilabels). It is pure
// (no I/O, no clock) except AddTerminationMessage, whose file reads go
// through the TailReader it is given.
package observe
