package plan_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/validate"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// randomPod returns a valid pod: 0-3 init containers (some sidecars, some
// with probes), 1-4 containers, any restart policies.
func randomPod(r *rand.Rand) *syncpodv1.Pod {
	policies := []syncpodv1.RestartPolicy{0, always, onFailure, never}
	p := mkPod(policies[r.IntN(4)], nil)
	p.Spec.HostNetwork = r.IntN(4) == 0
	n := 0
	mk := func(init bool) *syncpodv1.Container {
		n++
		c := ctr(fmt.Sprintf("c%d", n))
		if r.IntN(3) == 0 {
			c.Image = "busybox:1.37"
		}
		switch {
		case init && r.IntN(2) == 0:
			c.RestartPolicy = cAlways
		case r.IntN(4) == 0:
			c.RestartPolicy = []syncpodv1.ContainerRestartPolicy{cAlways, cOnFailure, cNever}[r.IntN(3)]
			if r.IntN(2) == 0 && !(init && c.RestartPolicy == cAlways) {
				withRule(syncpodv1.ExitCodeOperator(1+r.IntN(2)), int32(r.IntN(4)))(c)
			}
		}
		if r.IntN(3) == 0 {
			c.LivenessProbe = execProbe()
		}
		if r.IntN(3) == 0 {
			c.StartupProbe = execProbe()
		}
		return c
	}
	for range r.IntN(4) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, mk(true))
	}
	for range 1 + r.IntN(4) {
		p.Spec.Containers = append(p.Spec.Containers, mk(false))
	}
	if r.IntN(8) == 0 {
		p.DeletionTime = ts(5)
	}
	return p
}

// randomObserved returns an arbitrary (valid) observed state for pod.
func randomObserved(r *rand.Rand, pod *syncpodv1.Pod) (*syncpodv1.ObservedPod, []*syncpodv1.ContainerProbeResults) {
	o := &syncpodv1.ObservedPod{}
	for i := range r.IntN(4) {
		s := sb(fmt.Sprintf("s%d", i), int64(r.IntN(5)), syncpodv1.SandboxState(1+r.IntN(2)), uint32(r.IntN(3)))
		s.HostNetwork = r.IntN(3) == 0
		if r.IntN(4) == 0 || s.HostNetwork {
			s.Ip = ""
		}
		o.Sandboxes = append(o.Sandboxes, s)
	}
	all := append(append([]*syncpodv1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	var probes []*syncpodv1.ContainerProbeResults
	for i := range r.IntN(8) {
		c := all[r.IntN(len(all))]
		sandbox := ""
		if len(o.Sandboxes) > 0 && r.IntN(5) > 0 {
			sandbox = o.Sandboxes[r.IntN(len(o.Sandboxes))].Id
		}
		oc := inst(fmt.Sprintf("k%d", i), c, int64(r.IntN(10)), syncpodv1.ContainerState(1+r.IntN(4)), int32(r.IntN(3)), sandbox)
		if r.IntN(5) == 0 {
			oc.SpecHash = "stale"
		}
		if r.IntN(6) == 0 {
			oc.Reason = "OOMKilled"
		}
		o.Containers = append(o.Containers, oc)
		if r.IntN(3) == 0 {
			probes = append(probes, &syncpodv1.ContainerProbeResults{Name: c.Name, ContainerId: oc.Id,
				Liveness: syncpodv1.ProbeResult(r.IntN(3)), Startup: syncpodv1.ProbeResult(r.IntN(3))})
		}
	}
	return o, probes
}

func shuffled[T any](r *rand.Rand, in []T) []T {
	out := append([]T(nil), in...)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func TestPropertyDeterministicPureOrderFree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		pod := randomPod(r)
		observed, probes := randomObserved(r, pod)
		if err := validate.Request(pod, observed, probes); err != nil {
			t.Fatalf("case %d: generator made invalid input: %v", i, err)
		}
		podCopy, obsCopy := proto.Clone(pod), proto.Clone(observed)
		var probesCopy []*syncpodv1.ContainerProbeResults
		for _, p := range probes {
			probesCopy = append(probesCopy, proto.Clone(p).(*syncpodv1.ContainerProbeResults))
		}

		a1 := plan.Compute(pod, observed, probes)
		a2 := plan.Compute(pod, observed, probes)
		b1, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a1)
		b2, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a2)
		if string(b1) != string(b2) || !proto.Equal(a1, a2) {
			t.Fatalf("case %d: not deterministic:\n%s\n%s", i, renderFull(a1), renderFull(a2))
		}
		if !proto.Equal(pod, podCopy) || !proto.Equal(observed, obsCopy) {
			t.Fatalf("case %d: Compute mutated its inputs", i)
		}
		for j := range probes {
			if !proto.Equal(probes[j], probesCopy[j]) {
				t.Fatalf("case %d: Compute mutated probe results", i)
			}
		}
		checkWellFormed(t, pod, a1)

		// The same state listed in another order plans the same.
		o2 := proto.Clone(observed).(*syncpodv1.ObservedPod)
		o2.Sandboxes, o2.Containers = shuffled(r, o2.Sandboxes), shuffled(r, o2.Containers)
		a3 := plan.Compute(pod, o2, shuffled(r, probes))
		if !proto.Equal(a1, a3) {
			t.Fatalf("case %d: order changed the plan:\n%s\n%s", i, renderFull(a1), renderFull(a3))
		}
		if plan.IsEmpty(a1) && !proto.Equal(a1, &syncpodv1.PodActions{}) {
			t.Fatalf("case %d: empty plan with fields set: %v", i, a1)
		}
	}
}

func TestPropertyConvergence(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		pod := randomPod(r)
		pod.DeletionTime = nil
		s := newSim(pod)
		s.completeInits, s.probesPass = true, true
		limit := len(pod.Spec.InitContainers) + 2
		var trace []string
		converged := false
		for step := 0; step <= limit; step++ {
			a := plan.Compute(s.pod, s.obs, s.results())
			trace = append(trace, render(a))
			if plan.IsEmpty(a) {
				converged = true
				break
			}
			if a.KillPod && !a.CreateSandbox && step > 0 {
				t.Fatalf("pod %d: healthy pod killed: %v", i, trace)
			}
			s.apply(a)
		}
		if !converged {
			t.Fatalf("pod %d (%d init) did not converge in %d steps:\n%v\n%s", i, len(pod.Spec.InitContainers), limit, trace, s.describe())
		}
		// Converged means every regular container runs in the newest sandbox.
		for _, c := range pod.Spec.Containers {
			if n := s.newest(c.Name); n == nil || n.State != running {
				t.Fatalf("pod %d converged with %s not running:\n%s", i, c.Name, s.describe())
			}
		}
	}
}

func TestPropertyHealthyPodsConvergeInOneStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *syncpodv1.Pod
	}{
		{"R-2.1 then R-4 one container", mkPod(always, nil, ctr("web"))},
		{"R-2.1 then R-4 three containers under Never", mkPod(never, nil, ctr("a"), ctr("b"), ctr("c"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(tc.pod)
			s.apply(plan.Compute(s.pod, s.obs, nil))
			if a := plan.Compute(s.pod, s.obs, nil); !plan.IsEmpty(a) {
				t.Fatalf("re-plan after apply is not empty: %s", renderFull(a))
			}
		})
	}
}
