package plan_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/proto/linuxres"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func withResources(reqCPU, reqMem, limCPU, limMem string) func(*syncpodv1.Container) {
	return func(c *syncpodv1.Container) {
		c.Resources = &syncpodv1.ResourceRequirements{
			Requests: &syncpodv1.ResourceList{Cpu: reqCPU, Memory: reqMem},
			Limits:   &syncpodv1.ResourceList{Cpu: limCPU, Memory: limMem},
		}
	}
}

func withResizePolicy(resource string, p syncpodv1.ResizeRestartPolicy) func(*syncpodv1.Container) {
	return func(c *syncpodv1.Container) {
		c.ResizePolicy = append(c.ResizePolicy, &syncpodv1.ContainerResizePolicy{ResourceName: resource, RestartPolicy: p})
	}
}

// running is a running instance of c reporting the resources of was.
func runningWith(id string, c, was *syncpodv1.Container) *syncpodv1.ObservedContainer {
	st := inst(id, c, 10, running, 0, "s1")
	v, err := linuxres.Of(was.GetResources())
	if err != nil {
		panic(err)
	}
	st.Resources = v.Proto()
	st.MemoryRequestBytes = proto.Int64(linuxres.MemoryRequestBytes(was.GetResources()))
	return st
}

func TestResizeRules(t *testing.T) {
	const restart = syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER
	small := withResources("100m", "64Mi", "200m", "64Mi")
	big := withResources("1", "128Mi", "2", "256Mi")
	tests := []struct {
		name     string
		pod      *syncpodv1.Pod
		observed *syncpodv1.ObservedPod
		want     string
	}{
		{
			name:     "R-25.2 unchanged resources: nothing to do",
			pod:      mkPod(always, nil, ctr("web", big)),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("web", big), ctr("web", big))),
			want:     "noop",
		},
		{
			name:     "R-25.2 grown: memory then cpu, in place",
			pod:      mkPod(always, nil, ctr("web", big)),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("web", big), ctr("web", small))),
			want:     "sandbox=s1 attempt=0 update=[web/c1:memory web/c1:cpu]",
		},
		{
			name:     "R-25.2 shrunk: decreases, the memory limit checked",
			pod:      mkPod(always, nil, ctr("web", small)),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("web", small), ctr("web", big))),
			want:     "sandbox=s1 attempt=0 update=[web/c1:memory:decrease web/c1:cpu:decrease]",
		},
		{
			name: "R-25.2 decreases first, the later container first",
			pod:  mkPod(always, nil, ctr("a", small), ctr("b", small), ctr("c", big)),
			observed: obs(sbs(sb("s1", 1, ready, 0)),
				runningWith("c1", ctr("a", small), ctr("a", big)), runningWith("c2", ctr("b", small), ctr("b", big)),
				runningWith("c3", ctr("c", big), ctr("c", small))),
			want: "sandbox=s1 attempt=0 update=[b/c2:memory:decrease a/c1:memory:decrease c/c3:memory b/c2:cpu:decrease a/c1:cpu:decrease c/c3:cpu]",
		},
		{
			name:     "R-25.3 RestartContainer for memory restarts only that container",
			pod:      mkPod(never, nil, ctr("web", big, withResizePolicy(plan.ResourceMemory, restart)), ctr("side", small)),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("web", big), ctr("web", small)), runningWith("c2", ctr("side", small), ctr("side", small))),
			want:     "sandbox=s1 attempt=0 start=[web:RESIZE] kill=[web/c1:RESIZE]",
		},
		{
			name: "R-25.3 RestartContainer for memory, only CPU changed: in place",
			pod:  mkPod(always, nil, ctr("web", withResources("1", "64Mi", "2", "64Mi"), withResizePolicy(plan.ResourceMemory, restart))),
			observed: obs(sbs(sb("s1", 1, ready, 0)),
				runningWith("c1", ctr("web", small), ctr("web", small))),
			want: "sandbox=s1 attempt=0 update=[web/c1:cpu]",
		},
		{
			name:     "R-25.3 RestartContainer for memory, only the memory request changed: restarted",
			pod:      mkPod(always, nil, ctr("web", withResources("100m", "32Mi", "200m", "64Mi"), withResizePolicy(plan.ResourceMemory, restart))),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("web", small), ctr("web", small))),
			want:     "sandbox=s1 attempt=0 start=[web:RESIZE] kill=[web/c1:RESIZE]",
		},
		{
			name:     "R-25.3 only the memory request changed, no restart policy: nothing to do",
			pod:      mkPod(always, nil, ctr("web", withResources("100m", "32Mi", "200m", "64Mi"))),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("web", small), ctr("web", small))),
			want:     "noop",
		},
		{
			name:     "R-25.2 a runtime that reports no resources: nothing to compare",
			pod:      mkPod(always, nil, ctr("web", big)),
			observed: obs(sbs(sb("s1", 1, ready, 0)), inst("c1", ctr("web", big), 10, running, 0, "s1")),
			want:     "noop",
		},
		{
			name:     "R-25.2 a sidecar resizes in place",
			pod:      mkPod(always, inits(ctr("proxy", sidecar, big)), ctr("web", small)),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("proxy", sidecar, big), ctr("proxy", sidecar, small)), runningWith("c2", ctr("web", small), ctr("web", small))),
			want:     "sandbox=s1 attempt=0 update=[proxy/c1:memory proxy/c1:cpu]",
		},
		{
			name:     "R-25.2 a deleted pod is not resized",
			pod:      deleted(mkPod(always, nil, ctr("web", big))),
			observed: obs(sbs(sb("s1", 1, ready, 0)), runningWith("c1", ctr("web", big), ctr("web", small))),
			want:     "noop",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := plan.Compute(tc.pod, tc.observed, nil)
			checkWellFormed(t, tc.pod, a)
			if got := render(a); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestOlderHashKeepsContainers: a container created when the spec hash
// still covered resources is not restarted, unless its resources
// have changed since, as before.
func TestOlderHashKeepsContainers(t *testing.T) {
	full := hashFixtures()["full"]
	const olderFullHash = "59e432b53af23cc9" // SpecHash of "full" with resources hashed
	st := inst("c1", full, 10, running, 0, "s1")
	st.SpecHash = olderFullHash
	pod := mkPod(always, nil, full)
	if got := render(plan.Compute(pod, obs(sbs(sb("s1", 1, ready, 0)), st), nil)); got != "noop" {
		t.Errorf("older hash, same resources: %s, want noop", got)
	}
	changed := hashFixtures()["full"]
	changed.Resources.Limits.Cpu = "2"
	pod = mkPod(always, nil, changed)
	if got := render(plan.Compute(pod, obs(sbs(sb("s1", 1, ready, 0)), st), nil)); got != "sandbox=s1 attempt=0 start=[web:SPEC_CHANGED] kill=[web/c1:SPEC_CHANGED]" {
		t.Errorf("older hash, changed resources: %s, want a restart", got)
	}
}

func deleted(p *syncpodv1.Pod) *syncpodv1.Pod {
	p.DeletionTime = ts(100)
	return p
}
