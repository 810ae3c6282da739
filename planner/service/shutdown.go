package service

import (
	"context"
	"errors"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	"github.com/syncpod/syncpod/planner/store"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// NodeShutdown carries out graceful node shutdowns (the sync loop's
// Syncer implements it).
type NodeShutdown interface {
	// Shutdown runs a graceful node shutdown, or joins the one under
	// way, and returns its state once done.
	Shutdown(ctx context.Context, trigger string) (*plannerv1.NodeShutdown, error)
	// CancelShutdown reopens admission.
	CancelShutdown(ctx context.Context) (*plannerv1.NodeShutdown, error)
	// ShutdownState is the node's shutdown state; nil when none.
	ShutdownState() *plannerv1.NodeShutdown
	// Admitting reports whether new pods are admitted (false from the
	// start of a shutdown until it is cancelled, R-24.4).
	Admitting() bool
}

// errNoShutdown is the status of a shutdown call when the planner has no
// shutdown manager.
var errNoShutdown = errgrpc.ToGRPC(errgrpc.New(errgrpc.ErrFailedPrecondition,
	"graceful node shutdown is off: start syncpod-planner with --shutdown-grace-period or --shutdown-grace-period-by-pod-priority"))

// ShutdownNode runs (or cancels) a graceful node shutdown.
func (s *Service) ShutdownNode(ctx context.Context, req *plannerv1.ShutdownNodeRequest) (*plannerv1.ShutdownNodeResponse, error) {
	if s.shutdown == nil {
		return nil, errNoShutdown
	}
	var st *plannerv1.NodeShutdown
	var err error
	if req.GetCancel() {
		st, err = s.shutdown.CancelShutdown(ctx)
	} else {
		st, err = s.shutdown.Shutdown(ctx, "api")
	}
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ShutdownNode", err)
	}
	return &plannerv1.ShutdownNodeResponse{Shutdown: st}, nil
}

// GetNodeShutdown reports the node's shutdown state (an empty one when
// graceful shutdown is off or none happened).
func (s *Service) GetNodeShutdown(_ context.Context, _ *plannerv1.GetNodeShutdownRequest) (*plannerv1.GetNodeShutdownResponse, error) {
	st := &plannerv1.NodeShutdown{}
	if s.shutdown != nil {
		if cur := s.shutdown.ShutdownState(); cur != nil {
			st = cur
		}
	}
	return &plannerv1.GetNodeShutdownResponse{Shutdown: st}, nil
}

// admit refuses a new pod while the node shuts down; a pod
// already stored may still be updated.
func (s *Service) admit(ctx context.Context, p *syncpodv1.Pod) error {
	if s.shutdown == nil || s.shutdown.Admitting() {
		return nil
	}
	_, err := s.pods.Get(ctx, &plannerv1.PodRef{Namespace: validation.NamespaceOrDefault(p.GetNamespace()), Name: p.GetName()})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return errgrpc.Errorf(errgrpc.ErrFailedPrecondition, "%s: %s (reason %s)",
			nodeshutdown.NodeNotReadyMessage, nodeshutdown.NotAdmittedMessage, nodeshutdown.NotAdmittedReason)
	default:
		return err
	}
}
