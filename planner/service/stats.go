package service

import (
	"context"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/planner/store"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ListPodStats asks the executor for the selected pods' resource use;
// a pod with nothing running is listed with zeros.
func (s *Service) ListPodStats(ctx context.Context, req *plannerv1.ListPodStatsRequest) (*plannerv1.ListPodStatsResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	f, err := store.ParseFilter(req.GetNamespace(), req.GetLabelSelector())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ListPodStats", err)
	}
	recs, err := s.pods.List(ctx, f)
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ListPodStats", err)
	}
	if s.executor == nil {
		return nil, errgrpc.ToGRPCOp("ListPodStats", errNoExecutor)
	}
	resp := &plannerv1.ListPodStatsResponse{}
	if len(recs) == 0 {
		return resp, nil
	}
	uids := make([]string, len(recs))
	for i, r := range recs {
		uids[i] = r.GetPod().GetUid()
	}
	got, err := s.executor.ListPodStats(ctx, &executorv1.ListPodStatsRequest{PodUids: uids})
	if err != nil {
		return nil, errgrpc.Relay("executor", err)
	}
	byUID := map[string]*syncpodv1.PodStats{}
	for _, st := range got.GetStats() {
		byUID[st.GetPodUid()] = st
	}
	for _, r := range recs {
		st := byUID[r.GetPod().GetUid()]
		if st == nil {
			st = &syncpodv1.PodStats{PodUid: r.GetPod().GetUid()}
		}
		st.PodName, st.PodNamespace = r.GetPod().GetName(), r.GetPod().GetNamespace()
		resp.Stats = append(resp.Stats, st)
	}
	return resp, nil
}
