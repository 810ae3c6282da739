package e2e

import (
	"strings"
	"testing"
	"time"
)

// Crash consistency, R-2.2 (1): planner, executor and PLEG are each killed
// with SIGKILL, then all three at once, while a client applies, changes and
// deletes pods continuously and logs every acknowledged call. After each
// kill the planner's store must hold exactly what the log says (no lost
// acknowledgement); at the end, once the churn stops, the planner, crisim
// (through CRI list calls) and the host must agree with the log: exactly
// one READY sandbox and one running instance of every container of every
// pod that must run, at its last acknowledged revision; nothing of any
// other pod (no orphan); two steady pods never touched by the client keep
// their containers; and after the node stops, no container process is left
// on the host (by pid and start time).
func TestCrashConsistencySIGKILLUnderChurn(t *testing.T) {
	t.Parallel()
	pt := trackProcesses(t)
	n := startNode(t, nodeOptions{sockets: true})

	rounds := size(1, 17) // 4 kills a round: 68 in the soak
	pods, workers, ctrs := size(10, 50), size(4, 10), 2
	steady := map[string]int{"steady-0": 1, "steady-1": 1}
	for name := range steady {
		n.apply(revPod(name, ctrs, 1))
	}
	steadyIDs := map[string]string{}
	for name := range steady {
		rec := n.waitRunning(name, converge)
		for _, cs := range rec.GetStatus().GetContainerStatuses() {
			steadyIDs[name+"/"+cs.GetName()] = cs.GetContainerId()
		}
	}

	began := time.Now()
	c := newChurn(t, n, "churn", pods, ctrs, workers)
	c.start()
	faults, lost, checks := 0, 0, 0
	sets := [][]string{{"planner"}, {"executor"}, {"pleg"}, {"planner", "executor", "pleg"}}
	for r := range rounds {
		for _, set := range sets {
			// Let the churn run into the services, sample the host, kill.
			time.Sleep(time.Duration(1500+500*(r%3)) * time.Millisecond)
			pt.record(n.hostProcesses())
			n.killAndRestart(set...)
			faults += len(set)
			l, k := c.checkAcks("after SIGKILL of " + strings.Join(set, "+"))
			lost += l
			checks += k
			t.Logf("%5.1fs round %d: SIGKILL %s; store checked against the log for %d pods, lost %d; %s", time.Since(began).Seconds(), r+1, strings.Join(set, "+"), k, l, c.counts())
		}
	}
	time.Sleep(time.Second)
	c.stop()
	c.settle()
	l, k := c.checkAcks("after the churn stopped")
	lost += l
	checks += k

	t.Logf("%5.1fs churn stopped; waiting for the node to converge", time.Since(began).Seconds())
	want := c.expected()
	var last convergence
	eventually(t, 2*converge, "the node agrees with the acknowledgement log", func() (bool, string) {
		pt.record(n.hostProcesses())
		last = n.look(want, ctrs, true, steady)
		return last.ok(), last.String()
	})
	t.Logf("%5.1fs converged", time.Since(began).Seconds())
	for name := range steady {
		rec, err := n.get(name)
		if err != nil {
			t.Fatalf("steady pod %s: %v", name, err)
		}
		for _, cs := range rec.GetStatus().GetContainerStatuses() {
			if id := steadyIDs[name+"/"+cs.GetName()]; cs.GetContainerId() != id || cs.GetRestartCount() != 0 {
				t.Errorf("steady pod %s: container %s replaced (%s -> %s, restarts %d) though nothing changed it", name, cs.GetName(), id, cs.GetContainerId(), cs.GetRestartCount())
			}
		}
	}
	t.Logf("faults injected: %d SIGKILLs in %d rounds; %s; ack checks %d; pods to run at the end %d (+%d steady)", faults, rounds, c.counts(), checks, len(want), len(steady))
	summaryf(t, "faults=%d %s lost=%d duplicates=%d orphans=%d", faults, c.counts(), lost, last.duplicates, last.orphans)
}
