package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Whole-node scenarios in which the kubelet is known to have gone wrong
// around its own restart, played on syncpod: every service is a real
// process that is killed with SIGKILL and started again mid-scenario.

// a pod whose sidecar (a restartable init container)
// has a startup probe, and a regular container that crashes a second
// after each start. Once the sidecar has started and the crashed
// container has been restarted, every syncpod service (crisim, executor,
// PLEG, planner) is killed with SIGKILL and started again. The crashed
// container must go on being restarted, and the sidecar must be left
// alone: same instance, never restarted, still counted as started. (The
// kubelet lost its sidecar's startup result when it restarted, took the
// pod for not initialised, and never restarted the crashed container
// again: kubernetes/kubernetes pull request 137146.)
func TestSidecarWithStartupProbeKeepsRestartingItsCrashedContainerAfterEveryServiceRestarts(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{sockets: true})
	sidecar := sleeper("sidecar")
	sidecar.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	sidecar.StartupProbe = &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1, FailureThreshold: 3}
	p := pod("sidecar-crash", container("crash", "sh", "-c", "sleep 1; exit 1"))
	p.Spec.InitContainers = []*syncpodv1.Container{sidecar}
	n.apply(p)

	started := func(r *plannerv1.PodRecord) bool {
		sc := cstatus(r, "sidecar")
		return sc.GetStarted() && sc.GetState().GetRunning() != nil
	}
	rec := n.waitRecord("sidecar-crash", converge, "the sidecar started and crash restarted once", func(r *plannerv1.PodRecord) bool {
		return started(r) && cstatus(r, "crash").GetRestartCount() >= 1
	})
	sidecarID := cstatus(rec, "sidecar").GetContainerId()

	n.killAndRestart("crisim", "executor", "pleg", "planner")
	before := cstatus(rec, "crash").GetRestartCount()
	// Fetched after the restart: the count the restarted node reports.
	if r, err := n.get("sidecar-crash"); err == nil {
		before = max(before, cstatus(r, "crash").GetRestartCount())
	}
	rec = n.waitRecord("sidecar-crash", 2*converge, fmt.Sprintf("crash restarted twice more than %d times after the restarts", before), func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "crash").GetRestartCount() >= before+2
	})
	sc := cstatus(rec, "sidecar")
	if sc.GetContainerId() != sidecarID || sc.GetRestartCount() != 0 || !started(rec) {
		t.Errorf("sidecar after the restarts: id %s (was %s), restarts %d, started %t, %s; want the same instance, running and started",
			sc.GetContainerId(), sidecarID, sc.GetRestartCount(), sc.GetStarted(), stateString(sc.GetState()))
	}
}

// pods being deleted, whose containers take their grace
// period to stop (they note each SIGTERM and go on), while the planner,
// the executor and the PLEG are killed with SIGKILL and started again.
// Every pod must finish terminating (gone from the planner and from
// crisim, no process left), with no deadlock, and each container must
// have been sent its stop signal once: the restarted services carry the
// deletion on, and the kill in flight is not sent again. (cri-o deadlocked
// on the StopContainer a restarted kubelet sent again for a container
// already stopping.)
func TestPodsTerminatingWhileTheServicesRestartFinishWithOneStopSignal(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{sockets: true})
	dir := t.TempDir()
	const pods = 3
	grace := int64(20)
	names := make([]string, pods)
	for i := range names {
		names[i] = fmt.Sprintf("terminating-%d", i)
		terms := filepath.Join(dir, names[i])
		// The trap runs between sleeps: a TERM is noted within 0.1 s.
		p := pod(names[i], container("main", "sh", "-c", `trap "echo TERM >> `+terms+`" TERM; echo up > `+terms+`.up; while true; do sleep 0.1; done`))
		p.Spec.TerminationGracePeriodSeconds = &grace
		n.apply(p)
	}
	for _, name := range names {
		n.waitRunning(name, converge)
		eventually(t, converge, name+" set its trap", func() (bool, string) {
			_, err := os.Stat(filepath.Join(dir, name+".up"))
			return err == nil, fmt.Sprint(err)
		})
	}
	terms := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.Count(string(b), "TERM")
	}
	for _, name := range names {
		if code, out, errOut := n.ctl("delete", "pod", name, "--wait=false"); code != 0 {
			t.Fatalf("syncpodctl delete pod %s: exit %d: %s %s", name, code, out, errOut)
		}
	}
	eventually(t, converge, "every container got its SIGTERM", func() (bool, string) {
		var got []string
		for _, name := range names {
			got = append(got, fmt.Sprintf("%s=%d", name, terms(name)))
		}
		return !slices.ContainsFunc(names, func(name string) bool { return terms(name) == 0 }), strings.Join(got, " ")
	})

	// Inside the grace period of every container: the services go.
	killed := time.Now()
	n.killAndRestart("executor", "pleg", "planner")

	eventually(t, 2*converge, "every pod gone from the planner and crisim", func() (bool, string) {
		left := n.podNames()
		for _, name := range names {
			if slices.Contains(left, "default/"+name) {
				return false, "planner still lists " + strings.Join(left, ",")
			}
		}
		if cs := n.containerProcesses(); len(cs) > 0 {
			return false, "container processes left: " + strings.Join(cs, "; ")
		}
		return true, ""
	})
	t.Logf("every pod gone %s after the restarts", time.Since(killed).Round(100*time.Millisecond))
	for _, name := range names {
		if got := terms(name); got != 1 {
			t.Errorf("%s: its container was sent SIGTERM %d times, want once (the restart sent the kill in flight again)", name, got)
		}
	}
}
