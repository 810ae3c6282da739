package node

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/planner/nodeshutdown"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// shutdownPlanner is a planner whose node is shutting down: it refuses
// new pods with the planner's words, and reports the shutdown.
type shutdownPlanner struct {
	admitPlanner
	state *plannerv1.NodeShutdown
}

func (p *shutdownPlanner) ApplyPod(context.Context, *plannerv1.ApplyPodRequest, ...grpc.CallOption) (*plannerv1.ApplyPodResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "ApplyPod: "+nodeshutdown.NodeNotReadyMessage+": "+nodeshutdown.NotAdmittedMessage)
}

func (p *shutdownPlanner) GetNodeShutdown(context.Context, *plannerv1.GetNodeShutdownRequest, ...grpc.CallOption) (*plannerv1.GetNodeShutdownResponse, error) {
	return &plannerv1.GetNodeShutdownResponse{Shutdown: p.state}, nil
}

// while the node shuts down a new pod is refused with reason
// NodeShutdown, and the Node's Ready condition is False with the
// kubelet's message; a cancelled shutdown leaves the node ready.
func TestNodeShutdownAdmissionAndReadiness(t *testing.T) {
	kp := tokenlessAPIPod()
	p := &shutdownPlanner{state: &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_SHUTTING_DOWN}}
	a, rec, _ := admissionAgent(t, p, kp)
	key := kp.Namespace + "/" + kp.Name
	if err := a.syncPod(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	st := pendingStatus(a, key)
	if st == nil || st.Phase != "Failed" || st.Reason != nodeshutdown.NotAdmittedReason || st.Message != "Pod was rejected: "+nodeshutdown.NotAdmittedMessage {
		t.Fatalf("status %+v, want Failed %s", st, nodeshutdown.NotAdmittedReason)
	}
	if evs := events(rec); len(evs) != 1 || !strings.Contains(evs[0], nodeshutdown.NotAdmittedReason) {
		t.Fatalf("events %q, want one NodeShutdown warning", evs)
	}
	for _, tc := range []struct {
		name      string
		state     *plannerv1.NodeShutdown
		wantReady bool
	}{
		{"none", &plannerv1.NodeShutdown{}, true},
		{"shutting down", &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_SHUTTING_DOWN}, false},
		{"done", &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE}, false},
		{"cancelled", &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE, Cancelled: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.state = tc.state
			ready, why := a.plannerReady(context.Background())
			if ready != tc.wantReady || !ready && why != nodeshutdown.NodeNotReadyMessage {
				t.Fatalf("plannerReady = %v %q, want %v", ready, why, tc.wantReady)
			}
		})
	}
}

// countingPlanner counts ShutdownNode calls.
type countingPlanner struct {
	plannerv1.PlannerServiceClient
	calls int
}

func (p *countingPlanner) ShutdownNode(context.Context, *plannerv1.ShutdownNodeRequest, ...grpc.CallOption) (*plannerv1.ShutdownNodeResponse, error) {
	p.calls++
	return &plannerv1.ShutdownNodeResponse{Shutdown: &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE}}, nil
}

// the agent's SIGTERM (with --shutdown-on-sigterm) runs the
// planner's ShutdownNode, then stops the agent; without a signal nothing
// is asked.
func TestShutdownOnSignal(t *testing.T) {
	p := &countingPlanner{}
	term := make(chan struct{}, 1)
	term <- struct{}{}
	stopped := false
	ShutdownOnSignal(context.Background(), term, p, slog.New(slog.DiscardHandler), func() { stopped = true })
	if p.calls != 1 || !stopped {
		t.Fatalf("ShutdownNode calls %d, stopped %v; want 1, true", p.calls, stopped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ShutdownOnSignal(ctx, make(chan struct{}), p, slog.New(slog.DiscardHandler), func() { t.Fatal("stopped without a signal") })
	if p.calls != 1 {
		t.Fatalf("ShutdownNode asked without a signal")
	}
}
