package service

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/internal/errgrpc"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ListPodStats sums the runtime's container stats per pod, for running
// containers the executor manages.
func (s *Service) ListPodStats(ctx context.Context, req *executorv1.ListPodStatsRequest) (*executorv1.ListPodStatsResponse, error) {
	rs, ctx, err := s.criService(ctx)
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	running, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{crilabels.Managed: crilabels.ManagedValue},
	})
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	stats, err := rs.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{crilabels.Managed: crilabels.ManagedValue}})
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	byID := map[string]*runtimeapi.ContainerStats{}
	for _, st := range stats {
		byID[st.GetAttributes().GetId()] = st
	}
	out := sumPodStats(running, byID, req.GetPodUids())
	// The processes per pod, from the sandboxes' stats; a runtime that
	// has none leaves them 0.
	if sbs, err := rs.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{
		LabelSelector: map[string]string{crilabels.Managed: crilabels.ManagedValue}}); err == nil {
		addProcessCounts(out, sbs)
	}
	return &executorv1.ListPodStatsResponse{Stats: out}, nil
}

// addProcessCounts adds each sandbox's process count to its pod's stats.
func addProcessCounts(pods []*syncpodv1.PodStats, sbs []*runtimeapi.PodSandboxStats) {
	byUID := map[string]*syncpodv1.PodStats{}
	for _, p := range pods {
		byUID[p.GetPodUid()] = p
	}
	for _, sb := range sbs {
		if p := byUID[sb.GetAttributes().GetLabels()[crilabels.PodUID]]; p != nil {
			p.ProcessCount += sb.GetLinux().GetProcess().GetProcessCount().GetValue()
		}
	}
}

// sumPodStats groups running containers' stats by pod; only the pods in
// want, unless want is empty. Pods and containers come out sorted.
func sumPodStats(running []*runtimeapi.Container, byID map[string]*runtimeapi.ContainerStats, want []string) []*syncpodv1.PodStats {
	pods := map[string]*syncpodv1.PodStats{}
	for _, c := range running {
		uid := c.GetLabels()[crilabels.PodUID]
		if uid == "" || (len(want) > 0 && !slices.Contains(want, uid)) {
			continue
		}
		p := pods[uid]
		if p == nil {
			p = &syncpodv1.PodStats{PodUid: uid, PodName: c.GetLabels()[crilabels.PodName], PodNamespace: c.GetLabels()[crilabels.PodNamespace]}
			pods[uid] = p
		}
		st := byID[c.GetId()]
		cs := &syncpodv1.ContainerStats{
			Name: c.GetLabels()[crilabels.ContainerName], ContainerId: c.GetId(),
			CpuNanoCores:            st.GetCpu().GetUsageNanoCores().GetValue(),
			CpuUsageCoreNanoseconds: st.GetCpu().GetUsageCoreNanoSeconds().GetValue(),
			MemoryWorkingSetBytes:   st.GetMemory().GetWorkingSetBytes().GetValue(),
			MemoryRssBytes:          st.GetMemory().GetRssBytes().GetValue(),
			WritableLayerBytes:      st.GetWritableLayer().GetUsedBytes().GetValue(),
			WritableLayerInodes:     st.GetWritableLayer().GetInodesUsed().GetValue(),
			MemoryUsageBytes:        st.GetMemory().GetUsageBytes().GetValue(),
			StartTime:               nanoTime(c.GetCreatedAt()),
			CpuTime:                 nanoTime(st.GetCpu().GetTimestamp()),
			MemoryTime:              nanoTime(st.GetMemory().GetTimestamp()),
		}
		p.Containers = append(p.Containers, cs)
		p.CpuNanoCores += cs.GetCpuNanoCores()
		p.CpuUsageCoreNanoseconds += cs.GetCpuUsageCoreNanoseconds()
		p.MemoryWorkingSetBytes += cs.GetMemoryWorkingSetBytes()
		p.WritableLayerBytes += cs.GetWritableLayerBytes()
		p.WritableLayerInodes += cs.GetWritableLayerInodes()
	}
	out := make([]*syncpodv1.PodStats, 0, len(pods))
	for _, p := range pods {
		slices.SortFunc(p.Containers, func(a, b *syncpodv1.ContainerStats) int { return strings.Compare(a.GetName(), b.GetName()) })
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *syncpodv1.PodStats) int { return strings.Compare(a.GetPodUid(), b.GetPodUid()) })
	return out
}

// nanoTime is a CRI time (nanoseconds since the epoch); nil for 0, which
// the runtime sends when it has none.
func nanoTime(ns int64) *timestamppb.Timestamp {
	if ns <= 0 {
		return nil
	}
	return timestamppb.New(time.Unix(0, ns))
}

// RemoveUnusedImages removes the images no container uses.
func (s *Service) RemoveUnusedImages(ctx context.Context, _ *executorv1.RemoveUnusedImagesRequest) (*executorv1.RemoveUnusedImagesResponse, error) {
	removed, freed, err := s.runner.RemoveUnusedImages(ctx)
	if err != nil && len(removed) == 0 {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	if err != nil {
		s.log.Warn("some unused images were not removed", "err", err)
	}
	s.log.Info("removed unused images", "images", len(removed), "freed_bytes", freed)
	return &executorv1.RemoveUnusedImagesResponse{Removed: removed, FreedBytes: freed}, nil
}
