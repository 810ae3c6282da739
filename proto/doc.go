// Package proto holds syncpod's API: the .proto sources under syncpod/ and
// the Go code generated from them (committed; `make generate` rebuilds it
// with pinned plugins). Clients import the generated packages alone:
//
//	syncpod/v1           shared types (Pod, ObservedPod, PodActions, ...)
//	syncpod/planner/v1   PlannerService
//	syncpod/executor/v1  ExecutorService
//	syncpod/pleg/v1      PlegService
//	fielderr             bad input: field paths, InvalidArgument with BadRequest details
//	validation           the pod and observed-pod rules
//	k8snames             API enums spelled as Kubernetes spells them
package proto
