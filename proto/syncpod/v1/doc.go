// Package syncpodv1 holds syncpod's shared API types (proto package
// syncpod.v1): the desired Pod, the observed runtime state (ObservedPod),
// probe results, the change set (PodActions) and the user-facing PodStatus
// and Event. The *.pb.go files are generated from syncpod/v1/*.proto by
// `make generate`; this file is hand-written.
package syncpodv1
