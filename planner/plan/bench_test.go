package plan_test

import (
	"fmt"
	"testing"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// steadyPod is the sync loop's common case: a pod whose n containers (with
// liveness probes and passing results) all run in a ready sandbox, plus one
// older, exited instance of each, listed oldest first so Compute must sort.
func steadyPod(n int) (*syncpodv1.Pod, *syncpodv1.ObservedPod, []*syncpodv1.ContainerProbeResults) {
	pod := mkPod(always, nil)
	o := obs(sbs(sb("s1", 10, ready, 0)))
	var probes []*syncpodv1.ContainerProbeResults
	for i := range n {
		c := ctr(fmt.Sprintf("c%d", i), withLiveness, func(c *syncpodv1.Container) {
			c.Env = []*syncpodv1.EnvVar{{Name: "PORT", Value: "8080"}, {Name: "MODE", Value: "prod"}}
			c.Resources = &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Cpu: "500m", Memory: "128Mi"}}
		})
		pod.Spec.Containers = append(pod.Spec.Containers, c)
		o.Containers = append(o.Containers,
			inst(fmt.Sprintf("old%d", i), c, 11, exited, 1, "s1"),
			inst(fmt.Sprintf("new%d", i), c, 20+int64(i), running, 0, "s1"))
		probes = append(probes, probe(c.Name, "", pass, 0))
	}
	return pod, o, probes
}

func BenchmarkCompute(b *testing.B) {
	for _, n := range []int{1, 3, 20} {
		b.Run(fmt.Sprintf("%dcontainers", n), func(b *testing.B) {
			pod, o, probes := steadyPod(n)
			if a := plan.Compute(pod, o, probes); !plan.IsEmpty(a) {
				b.Fatalf("steady pod is not steady: %s", renderFull(a))
			}
			b.ReportAllocs()
			for b.Loop() {
				plan.Compute(pod, o, probes)
			}
		})
	}
}

// BenchmarkComputeFresh plans a pod that has nothing yet: every start
// carries a formatted message.
func BenchmarkComputeFresh(b *testing.B) {
	pod, _, _ := steadyPod(3)
	b.ReportAllocs()
	for b.Loop() {
		plan.Compute(pod, nil, nil)
	}
}
