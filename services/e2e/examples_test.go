package e2e

import (
	"fmt"
	"os"
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

	// Deleted, the hooks pod runs its preStop hook, which removes the
	// greeting its postStart hook wrote: on crisim a file of the host's
	// /tmp, of the user the pod runs as (1000 when crisim is root).
	uid := os.Geteuid()
	if uid == 0 {
		uid = 1000
	}
	greeting := fmt.Sprintf("/tmp/syncpod-hooks-%d", uid)
	if _, err := os.Stat(greeting); err != nil {
		t.Fatalf("the postStart hook's greeting before the delete: %v", err)
	}
	if code, out, errOut := n.ctl("delete", "pod", "hooks"); code != 0 {
		t.Fatalf("syncpodctl delete pod hooks: exit %d: %s %s", code, out, errOut)
	}
	if _, err := os.Stat(greeting); !os.IsNotExist(err) {
		_ = os.Remove(greeting)
		t.Errorf("the preStop hook left %s behind (stat: %v)", greeting, err)
	}
}
