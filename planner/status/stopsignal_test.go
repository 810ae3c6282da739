package status

import (
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// a container's status reports the stop signal the runtime
// reports for its newest instance, and none before it has one.
func TestContainerStatusReportsTheRuntimesStopSignal(t *testing.T) {
	old, cur := inst("web", 1, exited, 0, 0), inst("web", 5, running, 0, 1)
	old.StopSignal, cur.StopSignal = "SIGTERM", "SIGUSR1"
	st := Compute(Input{Pod: mkPod(nil, []*syncpodv1.Container{ctr("web"), ctr("side")}), Observed: observed(cur, old), Now: t0})
	got := map[string]string{}
	for _, cs := range st.GetContainerStatuses() {
		got[cs.GetName()] = cs.GetStopSignal()
	}
	if got["web"] != "SIGUSR1" || got["side"] != "" {
		t.Errorf("stop signals = %v, want web SIGUSR1 (its newest instance) and side none", got)
	}
}
