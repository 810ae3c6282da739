package e2e

import (
	"strings"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestExamplesDoWhatTheySay applies examples/ as the README's first
// session does and checks each pod reaches the state its comment promises.
func TestExamplesDoWhatTheySay(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{backoffInitial: 10 * time.Second, backoffMax: 300 * time.Second})
	if code, out, errOut := n.ctl("apply", "-f", "../../examples"); code != 0 {
		t.Fatalf("syncpodctl apply -f examples: exit %d: %s %s", code, out, errOut)
	}
	n.waitRecord("web", time.Minute, "Running with every container and the sidecar ready", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING && allReady(r)
	})
	n.waitRecord("job", time.Minute, "Succeeded", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED
	})
	n.waitRecord("crashloop", time.Minute, "CrashLoopBackOff after a restart", func(r *plannerv1.PodRecord) bool {
		c := cstatus(r, "crash")
		return c.GetRestartCount() >= 1 && c.GetState().GetWaiting().GetReason() == "CrashLoopBackOff"
	})
	n.waitRecord("liveness", time.Minute, "restarted by its liveness probe", func(r *plannerv1.PodRecord) bool {
		e := findEvent(r, "Killing", "app")
		return cstatus(r, "app").GetRestartCount() >= 1 && e != nil
	})
	n.waitRecord("hooks", time.Minute, "Running after its postStart hook", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING && allReady(r)
	})
	eventually(t, time.Minute, "the hooks example printing its postStart greeting", func() (bool, string) {
		code, out, errOut := n.ctl("logs", "hooks", "-c", "app")
		return code == 0 && strings.Contains(out, "hello from postStart (uid "), out + errOut
	})
	checkSiteExample(t, n)
	code, out, _ := n.ctl("get", "pods")
	if code != 0 {
		t.Fatalf("get pods: exit %d", code)
	}
	t.Logf("syncpodctl get pods:\n%s", out)
}
