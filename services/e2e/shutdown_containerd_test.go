package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestGracefulShutdownOnContainerd shuts down a node on containerd with
// pods of three priorities: syncpodctl node shutdown ends them
// lowest priority first, each group's containers stopped before the next
// group is told, within the groups' budgets; each pod ends Failed with
// the kubelet's reason and message; a new pod is refused meanwhile. Then
// the planner starts again, as after the machine came back: the pods with
// restart policy Always run again, each started once, and the one with
// Never stays Failed.
func TestGracefulShutdownOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t) // skips loudly, or fails in CI/as root
	busybox := containerdtest.BusyboxImage()
	// Budgets far above what a stop takes: the test checks the order, and
	// that no group had to be given up on.
	n := startNode(t, nodeOptions{criEndpoint: endpoint, plannerArgs: []string{
		"--shutdown-grace-period-by-pod-priority=0=30s,100000=30s,2000000000=30s", "--shutdown-logind=false"}})

	// A container that takes a moment to stop, so a group's stop is a
	// span of time the next group's must not overlap.
	stopper := func() *syncpodv1.Container {
		return &syncpodv1.Container{Name: "app", Image: busybox,
			Command:         []string{"sh", "-c", "trap 'sleep 1; exit 0' TERM; while true; do sleep 0.2; done"},
			ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
	}
	type spec struct {
		name  string
		prio  *int32
		never bool
	}
	specs := []spec{
		{"sd-regular", nil, false}, {"sd-once", nil, true},
		{"sd-high", new(int32(100000)), false}, {"sd-critical", new(nodeshutdown.SystemCriticalPriority), false},
	}
	for _, s := range specs {
		p := pod(s.name, stopper())
		p.Spec.HostNetwork = true
		p.Spec.Priority = s.prio
		p.Spec.TerminationGracePeriodSeconds = new(int64(20))
		if s.never {
			p.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
		}
		n.apply(p)
	}
	for _, s := range specs {
		n.waitRunning(s.name, time.Minute)
	}

	code, out, errOut := n.ctl("node", "shutdown")
	if code != 0 {
		t.Fatalf("syncpodctl node shutdown: exit %d: %s %s", code, out, errOut)
	}
	t.Logf("syncpodctl node shutdown:\n%s", out)
	resp, err := n.pods.GetNodeShutdown(rpcCtx(t), &plannerv1.GetNodeShutdownRequest{})
	if err != nil {
		t.Fatal(err)
	}
	st := resp.GetShutdown()
	if st.GetPhase() != plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE || len(st.GetGroups()) != 3 {
		t.Fatalf("shutdown state %v, want DONE with three groups", st)
	}
	groupOf := map[string]int{}
	for i, g := range st.GetGroups() {
		if g.GetTimedOut() {
			t.Errorf("group %d (priority %d) ran out of its %ds budget", i, g.GetPriority(), g.GetGracePeriodSeconds())
		}
		for _, p := range g.GetPods() {
			groupOf[p.GetName()] = i
		}
	}
	if groupOf["sd-regular"] != 0 || groupOf["sd-once"] != 0 || groupOf["sd-high"] != 1 || groupOf["sd-critical"] != 2 {
		t.Fatalf("groups %v, want regular and once first, then high, then critical", groupOf)
	}
	// Each pod: Failed, Terminated, the kubelet's message, its container
	// stopped inside its group's span (after the group began, before the
	// next one began).
	for _, s := range specs {
		rec, err := n.get(s.name)
		if err != nil {
			t.Fatal(err)
		}
		ps := rec.GetStatus()
		if ps.GetPhase() != syncpodv1.PodPhase_POD_PHASE_FAILED || ps.GetReason() != nodeshutdown.Reason || ps.GetMessage() != nodeshutdown.Message {
			t.Errorf("%s: %v %q %q, want Failed %q %q", s.name, ps.GetPhase(), ps.GetReason(), ps.GetMessage(), nodeshutdown.Reason, nodeshutdown.Message)
		}
		term := cstatus(rec, "app").GetState().GetTerminated()
		if term == nil {
			t.Errorf("%s: app %s, want terminated", s.name, stateString(cstatus(rec, "app").GetState()))
			continue
		}
		g := st.GetGroups()[groupOf[s.name]]
		fin := term.GetFinishedAt().AsTime()
		if fin.Before(g.GetStartedAt().AsTime()) || fin.After(g.GetEndedAt().AsTime()) {
			t.Errorf("%s: stopped at %v, outside its group's span %v..%v", s.name, fin, g.GetStartedAt().AsTime(), g.GetEndedAt().AsTime())
		}
		sbs, cs := n.runtimeOf(rec.GetPod().GetUid())
		for _, c := range cs {
			if c.GetState().String() == "CONTAINER_RUNNING" {
				t.Errorf("%s: container %s still running in containerd", s.name, c.GetId())
			}
		}
		for _, sb := range sbs {
			if sb.GetState().String() == "SANDBOX_READY" {
				t.Errorf("%s: sandbox %s still ready in containerd", s.name, sb.GetId())
			}
		}
	}
	for i := 1; i < len(st.GetGroups()); i++ {
		if prev, cur := st.GetGroups()[i-1], st.GetGroups()[i]; cur.GetStartedAt().AsTime().Before(prev.GetEndedAt().AsTime()) {
			t.Errorf("group %d began before group %d ended", i, i-1)
		}
	}
	// admission is closed.
	_, err = n.pods.ApplyPod(rpcCtx(t), &plannerv1.ApplyPodRequest{Pod: pod("sd-late", stopper())})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), nodeshutdown.NotAdmittedMessage) {
		t.Fatalf("a new pod during the shutdown: %v, want FailedPrecondition %q", err, nodeshutdown.NotAdmittedMessage)
	}

	// The machine comes back: a new planner on the same database.
	n.killPlanner()
	for _, s := range specs {
		if s.never {
			continue
		}
		rec := n.waitRunning(s.name, time.Minute)
		if ps := rec.GetStatus(); ps.GetReason() != "" {
			t.Errorf("%s: running again with reason %q", s.name, ps.GetReason())
		}
	}
	// Nothing started twice: one running container per restarted pod,
	// none for the Never pod, which stays Failed.
	eventually(t, 30*time.Second, "one running container per restarted pod", func() (bool, string) {
		var saw []string
		ok := true
		for _, s := range specs {
			rec, err := n.get(s.name)
			if err != nil {
				return false, err.Error()
			}
			_, cs := n.runtimeOf(rec.GetPod().GetUid())
			running := 0
			for _, c := range cs {
				if c.GetState().String() == "CONTAINER_RUNNING" {
					running++
				}
			}
			want := 1
			if s.never {
				want = 0
			}
			ok = ok && running == want
			saw = append(saw, fmt.Sprintf("%s: %d running", s.name, running))
		}
		return ok, strings.Join(saw, ", ")
	})
	rec, err := n.get("sd-once")
	if err != nil {
		t.Fatal(err)
	}
	if ps := rec.GetStatus(); ps.GetPhase() != syncpodv1.PodPhase_POD_PHASE_FAILED || ps.GetReason() != nodeshutdown.Reason {
		t.Errorf("sd-once after the restart: %v %q, want Failed %q", ps.GetPhase(), ps.GetReason(), nodeshutdown.Reason)
	}
	if resp, err := n.pods.GetNodeShutdown(rpcCtx(t), &plannerv1.GetNodeShutdownRequest{}); err != nil ||
		resp.GetShutdown().GetPhase() != plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_UNSPECIFIED {
		t.Errorf("after the restart the shutdown is %v (%v), want none", resp.GetShutdown(), err)
	}
	// Admission is open again.
	n.apply(pod("sd-late", stopper()))
}
