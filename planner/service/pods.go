package service

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

var errNoStore = status.Error(codes.Unavailable, "the desired-pod store is not configured")

// ApplyPod stores a desired pod.
func (s *Service) ApplyPod(ctx context.Context, req *plannerv1.ApplyPodRequest) (*plannerv1.ApplyPodResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	if req.GetPod() == nil {
		return nil, status.Error(codes.InvalidArgument, "pod: required")
	}
	p, res, err := s.pods.Apply(ctx, req.GetPod())
	if fields := validate.As(err); len(fields) > 0 {
		// Paths relative to the request, as Plan reports them.
		err = fields.Prefix("pod")
	}
	if err != nil {
		return nil, toStatus("ApplyPod", err)
	}
	return &plannerv1.ApplyPodResponse{Pod: p, Result: res}, nil
}

// DeletePod marks a pod as terminating.
func (s *Service) DeletePod(ctx context.Context, req *plannerv1.DeletePodRequest) (*plannerv1.DeletePodResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	p, err := s.pods.MarkDeleted(ctx, req.GetPod(), req.GracePeriodSeconds)
	if err != nil {
		return nil, toStatus("DeletePod", err)
	}
	return &plannerv1.DeletePodResponse{Pod: p}, nil
}

// GetPod returns one pod with its status and events.
func (s *Service) GetPod(ctx context.Context, req *plannerv1.GetPodRequest) (*plannerv1.GetPodResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	rec, err := s.pods.Get(ctx, req.GetPod())
	if err != nil {
		return nil, toStatus("GetPod", err)
	}
	return &plannerv1.GetPodResponse{Record: rec}, nil
}

// ListPods lists pods, without their events.
func (s *Service) ListPods(ctx context.Context, req *plannerv1.ListPodsRequest) (*plannerv1.ListPodsResponse, error) {
	if s.pods == nil {
		return nil, errNoStore
	}
	f, err := store.ParseFilter(req.GetNamespace(), req.GetLabelSelector())
	if err != nil {
		return nil, toStatus("ListPods", err)
	}
	recs, err := s.pods.List(ctx, f)
	if err != nil {
		return nil, toStatus("ListPods", err)
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
	f, err := store.ParseFilter(req.GetNamespace(), req.GetLabelSelector())
	if err != nil {
		return toStatus("WatchPods", err)
	}
	sub, err := s.pods.Subscribe(ctx, f)
	if err != nil {
		return toStatus("WatchPods", err)
	}
	defer sub.Close()
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			return toStatus("WatchPods", err)
		}
		for _, ev := range evs {
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}
