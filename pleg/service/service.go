package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/syncpod/syncpod/pleg/fanout"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Core is what the service needs from the PLEG (implemented by *pleg.PLEG).
type Core interface {
	Subscribe(podUIDs []string) *fanout.Subscription
	GetPodStatus(ctx context.Context, uid string, newerThan time.Time) (*syncpodv1.ObservedPod, error)
	ListPodStatuses() ([]*syncpodv1.ObservedPod, time.Time, plegv1.PlegMode)
}

// ErrInvalid classifies bad requests.
var ErrInvalid = errors.New("invalid argument")

// Service implements plegv1.PlegServiceServer.
type Service struct {
	plegv1.UnsafePlegServiceServer
	core Core
}

// New returns the PLEG service over core.
func New(core Core) *Service { return &Service{core: core} }

// maxUIDs bounds a Watch filter.
const maxUIDs = 10000

// invalid joins field problems into one ErrInvalid error.
func invalid(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
}

func validateWatch(req *plegv1.WatchRequest) error {
	var problems []string
	if n := len(req.GetPodUids()); n > maxUIDs {
		problems = append(problems, fmt.Sprintf("pod_uids: at most %d, got %d", maxUIDs, n))
	}
	seen := map[string]bool{}
	for i, u := range req.GetPodUids() {
		switch {
		case u == "":
			problems = append(problems, fmt.Sprintf("pod_uids[%d]: must not be empty", i))
		case seen[u]:
			problems = append(problems, fmt.Sprintf("pod_uids[%d]: duplicate %q", i, u))
		}
		seen[u] = true
	}
	return invalid(problems)
}

// Watch streams lifecycle events until the client cancels.
func (s *Service) Watch(req *plegv1.WatchRequest, stream grpc.ServerStreamingServer[plegv1.WatchResponse]) error {
	if err := validateWatch(req); err != nil {
		return toStatus(err)
	}
	sub := s.core.Subscribe(req.GetPodUids())
	defer sub.Close()
	ctx := stream.Context()
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return toStatus(err)
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
	var problems []string
	if req.GetPodUid() == "" {
		problems = append(problems, "pod_uid: required")
	}
	var newer time.Time
	if req.GetNewerThan() != nil {
		if err := req.GetNewerThan().CheckValid(); err != nil {
			problems = append(problems, "newer_than: "+err.Error())
		} else {
			newer = req.GetNewerThan().AsTime()
		}
	}
	if err := invalid(problems); err != nil {
		return nil, toStatus(err)
	}
	pod, err := s.core.GetPodStatus(ctx, req.GetPodUid(), newer)
	if err != nil {
		return nil, toStatus(err)
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

// toStatus is the one place errors become gRPC statuses.
func toStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "no status newer than asked before the deadline")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, fanout.ErrClosed):
		return status.Error(codes.Unavailable, "the PLEG closed this subscription; watch again")
	default:
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Internal, err.Error())
	}
}
