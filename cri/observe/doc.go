// Package observe converts what the CRI runtime reports (list results,
// sandbox and container statuses) into syncpod ObservedPod statuses,
// reading back the labels and annotations the executor wrote (package
// crilabels), and groups list results by pod for the PLEG's relist. Pod,
// Sandbox and Container are pure (no I/O, no clock); Read is the one
// helper that calls a runtime, to read one pod back outside the PLEG.
package observe
