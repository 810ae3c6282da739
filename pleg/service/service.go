package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/pleg/fanout"
	"github.com/syncpod/syncpod/proto/fielderr"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Core is what the service needs from the PLEG (implemented by *pleg.PLEG).
type Core interface {
	Subscribe(podUIDs []string) *fanout.Subscription
	GetPodStatus(ctx context.Context, uid string, newerThan time.Time) (*syncpodv1.ObservedPod, error)
	ListPodStatuses() ([]*syncpodv1.ObservedPod, time.Time, plegv1.PlegMode)
}

// ErrInvalid classifies bad requests; it is errgrpc.ErrInvalidArgument
// (fielderr.ErrInvalid), which every validation error of every syncpod
// service matches.
var ErrInvalid = errgrpc.ErrInvalidArgument

// Service implements plegv1.PlegServiceServer.
type Service struct {
	plegv1.UnsafePlegServiceServer
	core Core
}

// New returns the PLEG service over core.
func New(core Core) *Service { return &Service{core: core} }

// maxUIDs bounds a Watch filter.
const maxUIDs = 10000

func validateWatch(req *plegv1.WatchRequest) error {
	var l fielderr.List
	if n := len(req.GetPodUids()); n > maxUIDs {
		l.Add("pod_uids", "%d entries exceed the limit of %d", n, maxUIDs)
		return l.Err()
	}
	seen := map[string]int{}
	for i, u := range req.GetPodUids() {
		p := fmt.Sprintf("pod_uids[%d]", i)
		switch prev, dup := seen[u]; {
		case u == "":
			l.Add(p, "must not be empty")
		case len(u) > validation.MaxIDLen:
			l.Add(p, "%d bytes exceed the limit of %d", len(u), validation.MaxIDLen)
		case dup:
			l.Add(p, "duplicate %s (also pod_uids[%d])", fielderr.Quote(u), prev)
		default:
			seen[u] = i
		}
	}
	return l.Err()
}

// Watch streams lifecycle events until the client cancels.
func (s *Service) Watch(req *plegv1.WatchRequest, stream grpc.ServerStreamingServer[plegv1.WatchResponse]) error {
	if err := validateWatch(req); err != nil {
		return errgrpc.ToGRPC(err)
	}
	sub := s.core.Subscribe(req.GetPodUids())
	defer sub.Close()
	ctx := stream.Context()
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return errgrpc.ToGRPC(classify(err))
		}
		if !req.GetIncludeStatus() && ev.GetObserved() != nil {
			ev = &plegv1.PodLifecycleEvent{PodUid: ev.GetPodUid(), Type: ev.GetType(), ContainerId: ev.GetContainerId(), Time: ev.GetTime()}
		}
		if err := stream.Send(&plegv1.WatchResponse{Event: ev}); err != nil {
			return err
		}
	}
}

// GetPodStatus returns a pod's status newer than newer_than, waiting until
// the request deadline at most.
func (s *Service) GetPodStatus(ctx context.Context, req *plegv1.GetPodStatusRequest) (*plegv1.GetPodStatusResponse, error) {
	var l fielderr.List
	switch u := req.GetPodUid(); {
	case u == "":
		l.Add("pod_uid", "required")
	case len(u) > validation.MaxIDLen:
		l.Add("pod_uid", "%d bytes exceed the limit of %d", len(u), validation.MaxIDLen)
	}
	var newer time.Time
	if req.GetNewerThan() != nil {
		if err := req.GetNewerThan().CheckValid(); err != nil {
			l.Add("newer_than", "%v", err)
		} else {
			newer = req.GetNewerThan().AsTime()
		}
	}
	if err := l.Err(); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	pod, err := s.core.GetPodStatus(ctx, req.GetPodUid(), newer)
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	return &plegv1.GetPodStatusResponse{Observed: pod}, nil
}

// ListPodStatuses returns the whole cache.
func (s *Service) ListPodStatuses(context.Context, *plegv1.ListPodStatusesRequest) (*plegv1.ListPodStatusesResponse, error) {
	pods, ts, mode := s.core.ListPodStatuses()
	resp := &plegv1.ListPodStatusesResponse{Pods: pods, Mode: mode}
	if !ts.IsZero() {
		resp.CacheTimestamp = timestamppb.New(ts)
	}
	return resp, nil
}

// The PLEG's errors, with the message a client acts on.
var (
	// errNoNewerStatus: GetPodStatus waited until the deadline for a
	// status newer than newer_than.
	errNoNewerStatus = errgrpc.New(errgrpc.ErrDeadlineExceeded, "no status newer than asked before the deadline")
	// errWatchAgain: the PLEG ended a Watch subscription (it fell behind,
	// or the PLEG is stopping).
	errWatchAgain = errgrpc.New(errgrpc.ErrUnavailable, "the PLEG closed this subscription; watch again")
)

// classify gives the core's errors the PLEG's messages; errgrpc.ToGRPC
// maps what it returns.
func classify(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errNoNewerStatus
	case errors.Is(err, fanout.ErrClosed):
		return errWatchAgain
	}
	return err
}
