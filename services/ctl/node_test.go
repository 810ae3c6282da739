package ctl

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// syncpodctl node shutdown asks the planner's ShutdownNode and
// prints the groups; node status reads GetNodeShutdown; --cancel cancels.
func TestNodeShutdown(t *testing.T) {
	h := newHarness(t)
	if code := h.run(t, "node", "status"); code != 0 || !strings.HasSuffix(h.out.String(), "\nnode is not shutting down\n") {
		t.Fatalf("node status before: exit %d %q", code, h.out)
	}
	at := func(s int) *timestamppb.Timestamp { return timestamppb.New(now.Add(time.Duration(s) * time.Second)) }
	h.planner.SetShutdown(&plannerv1.NodeShutdown{Trigger: "api", StartedAt: at(0), EndedAt: at(12), Groups: []*plannerv1.NodeShutdownGroup{
		{Priority: 0, GracePeriodSeconds: 20, StartedAt: at(0), EndedAt: at(3),
			Pods: []*plannerv1.NodeShutdownPod{{Namespace: "default", Name: "web", GracePeriodSeconds: 20}, {Namespace: "default", Name: "quick", GracePeriodSeconds: 2}}},
		{Priority: 100000, GracePeriodSeconds: 5},
		{Priority: 2000000000, GracePeriodSeconds: 9, StartedAt: at(3), EndedAt: at(12), TimedOut: true,
			Pods: []*plannerv1.NodeShutdownPod{{Namespace: "kube-system", Name: "dns", GracePeriodSeconds: 9}}},
	}})
	if code := h.run(t, "node", "shutdown"); code != 0 {
		t.Fatalf("node shutdown: exit %d %s", code, h.err)
	}
	want := `node shutdown done in 12s (trigger api)
PRIORITY    BUDGET  TOOK  TIMED OUT  PODS
0           20s     3s    false      default/web(20s),default/quick(2s)
100000      5s      -     false      <none>
2000000000  9s      9s    true       kube-system/dns(9s)
`
	if got := h.out.String(); got != want {
		t.Fatalf("node shutdown printed\n%s\nwant\n%s", got, want)
	}
	if code := h.run(t, "node", "status"); code != 0 || !strings.Contains(h.out.String(), "\nnode shutdown done in 12s") {
		t.Fatalf("node status after: exit %d %q", code, h.out)
	}
	if code := h.run(t, "node", "shutdown", "--cancel"); code != 0 || h.planner.ShutdownCancels() != 1 {
		t.Fatalf("node shutdown --cancel: exit %d, cancels %d", code, h.planner.ShutdownCancels())
	}
	if code := h.run(t, "node"); code != 2 {
		t.Fatalf("node without a subcommand: exit %d, want 2", code)
	}
}

// node status shows the pressure conditions the planner's
// eviction manager decided, or says it measures nothing when it is off.
func TestNodeStatusShowsThePressureConditions(t *testing.T) {
	h := newHarness(t)
	if code := h.run(t, "node", "status"); code != 0 || !strings.HasPrefix(h.out.String(), "pressure: not measured (the planner's eviction manager is off") {
		t.Fatalf("node status, manager off: exit %d %q", code, h.out)
	}
	h.planner.SetNodeConditions(&plannerv1.GetNodeConditionsResponse{EvictionManager: true, Conditions: []*plannerv1.NodeCondition{
		{Type: "MemoryPressure", Status: true, Reason: "KubeletHasInsufficientMemory", Message: "node has memory pressure, signals memory.available", Signals: []string{"memory.available"}},
		{Type: "DiskPressure", Reason: "KubeletHasNoDiskPressure", Message: "node has no disk pressure"},
		{Type: "PIDPressure", Reason: "KubeletHasSufficientPID", Message: "node has sufficient PID available"},
	}})
	if code := h.run(t, "node", "status"); code != 0 {
		t.Fatalf("node status: exit %d %s", code, h.err)
	}
	want := `CONDITION       STATUS  REASON                        MESSAGE
MemoryPressure  True    KubeletHasInsufficientMemory  node has memory pressure, signals memory.available
DiskPressure    False   KubeletHasNoDiskPressure      node has no disk pressure
PIDPressure     False   KubeletHasSufficientPID       node has sufficient PID available
node is not shutting down
`
	if got := h.out.String(); got != want {
		t.Fatalf("node status printed\n%s\nwant\n%s", got, want)
	}
	h.planner.SetNodeConditionsError(status.Error(codes.Unavailable, "planner restarting"))
	if code := h.run(t, "node", "status"); code == 0 || !strings.Contains(h.err.String(), "planner restarting") {
		t.Fatalf("node status with the conditions failing: exit %d %q", code, h.err)
	}
}
