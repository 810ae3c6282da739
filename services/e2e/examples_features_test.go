package e2e

import (
	"strings"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestFeatureExamplesDoWhatTheySay applies examples/features, the README's
// examples of the kubelet's newer features that crisim can run, and
// checks each pod does what its comment says.
func TestFeatureExamplesDoWhatTheySay(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	if code, out, errOut := n.ctl("apply", "-f", "../../examples/features"); code != 0 {
		t.Fatalf("syncpodctl apply -f examples/features: exit %d: %s %s", code, out, errOut)
	}
	running := func(r *plannerv1.PodRecord, name string) bool {
		return cstatus(r, name).GetState().GetRunning() != nil
	}
	// worker's exit 42 restarted both containers in place; its
	// second run kept going.
	n.waitRecord("restart-all", time.Minute, "both containers restarted once and running", func(r *plannerv1.PodRecord) bool {
		w, p := cstatus(r, "worker"), cstatus(r, "peer")
		return w.GetRestartCount() >= 1 && p.GetRestartCount() >= 1 && running(r, "worker") && running(r, "peer")
	})
	eventually(t, time.Minute, "restart-all's worker in its second run", func() (bool, string) {
		code, out, errOut := n.ctl("logs", "restart-all", "-c", "worker")
		return code == 0 && strings.Contains(out, "second run"), out + errOut
	})
	// the env file the init container wrote gave the app its
	// variable.
	n.waitRecord("env-file", time.Minute, "Running", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING
	})
	eventually(t, time.Minute, "env-file's app printing the variable from the file", func() (bool, string) {
		code, out, errOut := n.ctl("logs", "env-file", "-c", "app")
		return code == 0 && strings.Contains(out, "DB_HOST=db.internal:5432"), out + errOut
	})
	// the stop signal reached the runtime and is in the status.
	n.waitRecord("stop-signal", time.Minute, "Running with stop signal SIGUSR1 in its status", func(r *plannerv1.PodRecord) bool {
		return running(r, "app") && cstatus(r, "app").GetStopSignal() == "SIGUSR1"
	})
}
