package critest

import (
	"context"
	"sort"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Observe reads the pod with uid back from the runtime as an ObservedPod,
// from the labels and annotations the executor writes: a stand-in for the
// PLEG in tests. Objects that vanish between list and status are skipped.
func Observe(ctx context.Context, rt internalapi.RuntimeService, uid string) (*syncpodv1.ObservedPod, error) {
	sel := map[string]string{crilabels.PodUID: uid}
	out := &syncpodv1.ObservedPod{Uid: uid, ObservedAt: timestamppb.Now()}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, sb := range sbs {
		st, err := rt.PodSandboxStatus(ctx, sb.GetId(), false)
		if err != nil || st.GetStatus() == nil {
			continue
		}
		s := st.GetStatus()
		out.Name, out.Namespace = s.GetMetadata().GetName(), s.GetMetadata().GetNamespace()
		state := syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			state = syncpodv1.SandboxState_SANDBOX_STATE_READY
		}
		out.Sandboxes = append(out.Sandboxes, &syncpodv1.ObservedSandbox{
			Id:          s.GetId(),
			State:       state,
			Attempt:     s.GetMetadata().GetAttempt(),
			CreatedAt:   ts(s.GetCreatedAt()),
			Ip:          s.GetNetwork().GetIp(),
			HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
		})
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		st, err := rt.ContainerStatus(ctx, c.GetId(), false)
		if err != nil || st.GetStatus() == nil {
			continue
		}
		s := st.GetStatus()
		name := s.GetLabels()[crilabels.ContainerName]
		if name == "" {
			name = s.GetMetadata().GetName()
		}
		rc, _ := strconv.Atoi(s.GetAnnotations()[crilabels.RestartCount])
		oc := &syncpodv1.ObservedContainer{
			Id:           s.GetId(),
			Name:         name,
			State:        containerState(s.GetState()),
			ExitCode:     s.GetExitCode(),
			Reason:       s.GetReason(),
			Message:      s.GetMessage(),
			SpecHash:     s.GetLabels()[crilabels.SpecHash],
			RestartCount: int32(rc),
			CreatedAt:    ts(s.GetCreatedAt()),
			StartedAt:    ts(s.GetStartedAt()),
			FinishedAt:   ts(s.GetFinishedAt()),
			SandboxId:    c.GetPodSandboxId(),
			Image:        s.GetImage().GetImage(),
		}
		out.Containers = append(out.Containers, oc)
	}
	sort.SliceStable(out.Sandboxes, func(i, j int) bool {
		return out.Sandboxes[i].GetCreatedAt().AsTime().After(out.Sandboxes[j].GetCreatedAt().AsTime())
	})
	sort.SliceStable(out.Containers, func(i, j int) bool {
		return out.Containers[i].GetCreatedAt().AsTime().After(out.Containers[j].GetCreatedAt().AsTime())
	})
	return out, nil
}

func ts(ns int64) *timestamppb.Timestamp {
	if ns <= 0 {
		return nil
	}
	return timestamppb.New(time.Unix(0, ns))
}

func containerState(s runtimeapi.ContainerState) syncpodv1.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return syncpodv1.ContainerState_CONTAINER_STATE_CREATED
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return syncpodv1.ContainerState_CONTAINER_STATE_EXITED
	default:
		return syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN
	}
}
