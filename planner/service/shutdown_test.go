package service

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/syncpod/syncpod/planner/nodeshutdown"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// fakeShutdown is a node shutdown manager whose admission the test sets.
type fakeShutdown struct {
	mu        sync.Mutex
	admitting bool
	calls     []string
}

func (f *fakeShutdown) Shutdown(_ context.Context, trigger string) (*plannerv1.NodeShutdown, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "shutdown "+trigger)
	f.admitting = false
	return &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE, Trigger: trigger}, nil
}

func (f *fakeShutdown) CancelShutdown(context.Context) (*plannerv1.NodeShutdown, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "cancel")
	f.admitting = true
	return &plannerv1.NodeShutdown{}, nil
}

func (f *fakeShutdown) ShutdownState() *plannerv1.NodeShutdown {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.admitting {
		return nil
	}
	return &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE}
}

func (f *fakeShutdown) Admitting() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.admitting
}

// during a shutdown a new pod is refused with the kubelet's
// words, nothing stored; a stored pod may still be updated; a cancel
// admits again.
func TestShutdownNodeAndAdmission(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	sd := &fakeShutdown{admitting: true}
	c := serveService(t, Options{Pods: st, Shutdown: sd})
	if _, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx")}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ShutdownNode(ctx, &plannerv1.ShutdownNodeRequest{})
	if err != nil || resp.GetShutdown().GetTrigger() != "api" {
		t.Fatalf("ShutdownNode = %v, %v", resp, err)
	}
	_, err = c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("late", "nginx")})
	wantCode(t, err, codes.FailedPrecondition, nodeshutdown.NotAdmittedMessage, nodeshutdown.NotAdmittedReason)
	if _, err := c.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Namespace: "default", Name: "late"}}); err == nil {
		t.Fatal("a refused pod was stored")
	}
	if _, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx:2")}); err != nil {
		t.Fatalf("updating a stored pod during a shutdown: %v", err)
	}
	got, err := c.GetNodeShutdown(ctx, &plannerv1.GetNodeShutdownRequest{})
	if err != nil || got.GetShutdown().GetPhase() != plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE {
		t.Fatalf("GetNodeShutdown = %v, %v", got, err)
	}
	if _, err := c.ShutdownNode(ctx, &plannerv1.ShutdownNodeRequest{Cancel: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("late", "nginx")}); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	if want := []string{"shutdown api", "cancel"}; len(sd.calls) != 2 || sd.calls[0] != want[0] || sd.calls[1] != want[1] {
		t.Fatalf("calls %v, want %v", sd.calls, want)
	}
}

func TestShutdownNodeOff(t *testing.T) {
	c, _ := setup(t)
	_, err := c.ShutdownNode(context.Background(), &plannerv1.ShutdownNodeRequest{})
	wantCode(t, err, codes.FailedPrecondition, "--shutdown-grace-period")
	got, err := c.GetNodeShutdown(context.Background(), &plannerv1.GetNodeShutdownRequest{})
	if err != nil || got.GetShutdown().GetPhase() != plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_UNSPECIFIED {
		t.Fatalf("GetNodeShutdown = %v, %v", got, err)
	}
}
