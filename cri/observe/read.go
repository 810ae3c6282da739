package observe

import (
	"context"
	"time"

	"github.com/syncpod/syncpod/cri/crilabels"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is the part of a CRI RuntimeService that Read calls.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// Read reads the pod with uid back from rt as an ObservedPod stamped
// observedAt, from the labels and annotations the executor writes: what
// the PLEG would report, for tests and tools that run without one.
// Objects that vanish between list and status are skipped.
func Read(ctx context.Context, rt Runtime, uid string, observedAt time.Time) (*syncpodv1.ObservedPod, error) {
	sel := map[string]string{crilabels.PodUID: uid}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	in := Inspected{SandboxOf: make(map[string]string, len(cs))}
	for _, sb := range sbs {
		st, err := rt.PodSandboxStatus(ctx, sb.GetId(), false)
		if err != nil || st.GetStatus() == nil {
			continue
		}
		in.Sandboxes = append(in.Sandboxes, st.GetStatus())
	}
	for _, c := range cs {
		st, err := rt.ContainerStatus(ctx, c.GetId(), false)
		if err != nil || st.GetStatus() == nil {
			continue
		}
		in.Containers = append(in.Containers, st.GetStatus())
		in.SandboxOf[c.GetId()] = c.GetPodSandboxId()
	}
	return Pod(uid, in, observedAt), nil
}
