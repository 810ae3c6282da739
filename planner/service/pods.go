package service

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"

	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/validate"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// PodStore is what the pod RPCs need from the desired-pod store;
// *store.Store implements it. Errors are classified with the store's
// sentinels (store.ErrInvalid, ErrNotFound, ErrUIDMismatch, ErrTerminating,
// ErrClosed).
type PodStore interface {
	// Apply creates or updates a pod, answering after the commit.
	Apply(ctx context.Context, p *syncpodv1.Pod) (*syncpodv1.Pod, plannerv1.ApplyResult, error)
	// MarkDeleted marks a pod as terminating.
	MarkDeleted(ctx context.Context, ref *plannerv1.PodRef, grace *int64) (*syncpodv1.Pod, error)
	// Get returns one record.
	Get(ctx context.Context, ref *plannerv1.PodRef) (*plannerv1.PodRecord, error)
	// List returns the matching records sorted by namespace then name.
	List(ctx context.Context, f store.Filter) ([]*plannerv1.PodRecord, error)
	// Subscribe starts a watch.
	Subscribe(ctx context.Context, f store.Filter) (*store.Subscription, error)
}

// errNoStore is the status of a call that needs the desired-pod store
// when none is configured.
var errNoStore = errgrpc.ToGRPC(errgrpc.New(errgrpc.ErrUnavailable, "the desired-pod store is not configured"))

// ApplyPod stores a desired pod.
func (s *Service) ApplyPod(ctx context.Context, req *plannerv1.ApplyPodRequest) (*plannerv1.ApplyPodResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	// Validated here as well as in the store: the store ignores the
	// planner-owned fields (deletion_grace_period_seconds, times), but a
	// request that sets them wrongly is refused as Plan refuses it.
	if req.GetPod() == nil {
		return nil, errgrpc.ToGRPCOp("ApplyPod", fielderr.Errors{{Path: "pod", Message: "required"}})
	}
	if err := validate.Pod(req.GetPod()); err != nil {
		return nil, errgrpc.ToGRPCOp("ApplyPod", validate.As(err).Prefix("pod"))
	}
	if err := s.admit(ctx, req.GetPod()); err != nil {
		return nil, errgrpc.ToGRPCOp("ApplyPod", err)
	}
	p, res, err := s.pods.Apply(ctx, req.GetPod())
	if fields := validate.As(err); len(fields) > 0 {
		// Paths relative to the request, as Plan reports them.
		err = fields.Prefix("pod")
	}
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ApplyPod", err)
	}
	return &plannerv1.ApplyPodResponse{Pod: p, Result: res}, nil
}

// DeletePod marks a pod as terminating.
func (s *Service) DeletePod(ctx context.Context, req *plannerv1.DeletePodRequest) (*plannerv1.DeletePodResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	var l fielderr.List
	l.Append("pod", refProblems(req.GetPod()))
	if g := req.GracePeriodSeconds; g != nil && *g < 0 {
		l.Add("grace_period_seconds", "must be >= 0")
	}
	if err := l.Err(); err != nil {
		return nil, errgrpc.ToGRPCOp("DeletePod", err)
	}
	p, err := s.pods.MarkDeleted(ctx, req.GetPod(), req.GracePeriodSeconds)
	if err != nil {
		return nil, errgrpc.ToGRPCOp("DeletePod", err)
	}
	return &plannerv1.DeletePodResponse{Pod: p}, nil
}

// GetPod returns one pod with its status and events.
func (s *Service) GetPod(ctx context.Context, req *plannerv1.GetPodRequest) (*plannerv1.GetPodResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	if errs := refProblems(req.GetPod()); len(errs) > 0 {
		return nil, errgrpc.ToGRPCOp("GetPod", errs.Prefix("pod"))
	}
	rec, err := s.pods.Get(ctx, req.GetPod())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("GetPod", err)
	}
	resp := &plannerv1.GetPodResponse{Record: rec}
	if s.timelines != nil {
		resp.LastSync = s.timelines.Last(rec.GetPod().GetUid())
	}
	return resp, nil
}

// ListPods lists pods, without their events.
func (s *Service) ListPods(ctx context.Context, req *plannerv1.ListPodsRequest) (*plannerv1.ListPodsResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	f, err := parseFilter(req.GetNamespace(), req.GetLabelSelector())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ListPods", err)
	}
	recs, err := s.pods.List(ctx, f)
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ListPods", err)
	}
	for _, r := range recs {
		r.Events = nil // the store returned fresh copies
	}
	return &plannerv1.ListPodsResponse{Records: recs}, nil
}

// WatchPods streams pod changes: one ADDED per existing matching pod, then
// every change; RESYNC when this watcher fell behind.
func (s *Service) WatchPods(req *plannerv1.WatchPodsRequest, stream grpc.ServerStreamingServer[plannerv1.WatchPodsResponse]) error {
	if s.pods == nil {
		return errNoStore
	}
	ctx := stream.Context()
	f, err := parseFilter(req.GetNamespace(), req.GetLabelSelector())
	if err != nil {
		return errgrpc.ToGRPCOp("WatchPods", err)
	}
	sub, err := s.pods.Subscribe(ctx, f)
	if err != nil {
		return errgrpc.ToGRPCOp("WatchPods", err)
	}
	defer sub.Close()
	// The response header says the subscription is in place: every change
	// from now on reaches this stream. A client that reads pods after it
	// has the header (syncpodctl's waits) cannot miss a change between its
	// read and the watch; before, a pod removed in that gap was in neither.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			return errgrpc.ToGRPCOp("WatchPods", err)
		}
		for _, ev := range evs {
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

// refProblems checks a pod reference; a missing one is a missing name.
func refProblems(ref *plannerv1.PodRef) fielderr.Errors {
	if ref == nil {
		return fielderr.Errors{{Message: "required"}}
	}
	return validate.As(validate.Ref(ref))
}

// parseFilter validates a list or watch filter (namespace and selector size
// here, selector syntax in the store) and builds it; every problem is a
// field error.
func parseFilter(namespace, selector string) (store.Filter, error) {
	if err := validate.Filter(namespace, selector); err != nil {
		return store.Filter{}, err
	}
	f, err := store.ParseFilter(namespace, selector)
	if err != nil {
		return store.Filter{}, fielderr.Errors{{Path: "label_selector", Message: err.Error()}}
	}
	return f, nil
}
