package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// a pod whose sidecar exits every second is deleted
// while its regular container takes its time to stop (an 8-second preStop
// hook within a 30-second grace period). The kubelet would leave the
// sidecar down once the termination began; syncpod starts it again, with
// its crash-loop back-off, and goes on probing it, for as long as the
// regular container is still stopping, and stops it only after. The pod is gone within its grace
// period. Every process appends to one trace file, so the order of events
// is the order of its lines.
func TestSidecarIsRestartedWhileThePodTerminates(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{backoffInitial: time.Second, backoffMax: 2 * time.Second})
	trace := filepath.Join(t.TempDir(), "trace")
	// The sidecar notes each start and a SIGTERM (within 0.2 s: its sleeps
	// are short), and exits with 1 after a second.
	proxy := container("proxy", "sh", "-c", `trap "echo proxy-term >> `+trace+`; exit 0" TERM; echo proxy-start >> `+trace+
		`; for i in 1 2 3 4 5; do sleep 0.2; done; exit 1`)
	proxy.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	// Its liveness probe notes each attempt, and always passes.
	proxy.LivenessProbe = &syncpodv1.Probe{PeriodSeconds: 1, Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{
		Command: []string{"sh", "-c", "echo proxy-probe >> " + trace}}}}
	app := container("app", "sh", "-c", `trap "echo app-term >> `+trace+`; exit 0" TERM; echo app-start >> `+trace+
		`; while true; do sleep 0.2; done`)
	app.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_Exec{
		Exec: &syncpodv1.ExecAction{Command: []string{"sh", "-c", "echo app-prestop >> " + trace + "; sleep 8"}}}}}
	p := pod("sidecar-crashing", app)
	p.Spec.InitContainers = []*syncpodv1.Container{proxy}
	grace := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &grace
	n.apply(p)
	n.waitRecord("sidecar-crashing", converge, "app running after a restart of the sidecar", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "app").GetState().GetRunning() != nil && cstatus(r, "proxy").GetRestartCount() > 0
	})

	began := time.Now()
	if code, out, errOut := n.ctl("delete", "pod", "sidecar-crashing"); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("syncpodctl delete pod sidecar-crashing: exit %d: %s %s", code, out, errOut)
	}
	took := time.Since(began)
	t.Logf("deletion took %s", took.Round(10*time.Millisecond))
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(raw))
	t.Logf("trace: %s", strings.Join(lines, " "))
	prestop, term := slices.Index(lines, "app-prestop"), slices.Index(lines, "app-term")
	if prestop < 0 || term < prestop {
		t.Fatalf("trace %v: want app-prestop, then app-term (the hook ran, then SIGTERM)", lines)
	}
	// Every start after the hook began is the kill's own: the pod's
	// syncs wait for the kill to end.
	restart := slices.Index(lines[prestop:term], "proxy-start")
	if restart < 0 {
		t.Fatalf("trace %v: no proxy-start while app was stopping: the sidecar was not started again during the termination", lines)
	}
	// The liveness probe of the instance started during the termination
	// ran too (the planner's probes of the pod ended with its deletion).
	if probes := slices.Index(lines[prestop+restart:term], "proxy-probe"); probes < 0 {
		t.Errorf("trace %v: no proxy-probe after the sidecar's restart while app was stopping", lines)
	}
	// the sidecar is stopped only after the regular container.
	if i := slices.Index(lines, "proxy-term"); i >= 0 && i < term {
		t.Errorf("trace %v: the sidecar got SIGTERM before app did", lines)
	}
	// The restarts do not stretch the termination past its grace period
	// (a stop past it would have been cut short by SIGKILL, and the pod
	// still removed after that).
	if took >= time.Duration(grace)*time.Second {
		t.Errorf("the deletion took %s, longer than the pod's grace period of %ds", took, grace)
	}
	if names := n.podNames(); slices.Contains(names, "default/sidecar-crashing") {
		t.Errorf("the pod is still listed after its deletion: %v", names)
	}
}
