package status

import (
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// BenchmarkCompute is one status computation for a pod with an init
// container, a sidecar and two containers, one of them restarted.
func BenchmarkCompute(b *testing.B) {
	pod := mkPod([]*syncpodv1.Container{ctr("init"), sidecar("proxy")}, []*syncpodv1.Container{ctr("web"), ctr("job")})
	obs := observed(inst("init", 1, exited, 0, 0), inst("proxy", 5, running, 0, 0),
		inst("web", 20, running, 0, 1), inst("web", 8, exited, 1, 0), inst("job", 9, running, 0, 0))
	prev := Compute(Input{Pod: pod, Observed: obs, Now: t0})
	for b.Loop() {
		Compute(Input{Pod: pod, Observed: obs, Previous: prev, Now: t0})
	}
}
