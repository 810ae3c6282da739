package plan_test

import (
	"testing"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestRestartAllContainersRules are the kubelet's computePodActions cases
// for RestartAllContainers, named after the behaviour.
func TestRestartAllContainersRules(t *testing.T) {
	s1 := sbs(sb("s1", 10, ready, 0))

	// A pod whose containers all run, one of them with a rule: nothing is
	// reset until that one exits with a matching code.
	foo1, foo2 := ctr("foo1"), ctr("foo2")
	foo3 := ctr("foo3", withPolicy(cAlways), withRestartAllRule(1))
	plain := mkPod(always, nil, foo1, foo2, foo3)

	// An init container's exit: init1 completed, init2 a running sidecar,
	// init3 exited 1 under a rule.
	init1, init2 := ctr("init1"), ctr("init2", sidecar)
	init3 := ctr("init3", withPolicy(cNever), withRestartAllRule(1))
	initPod := mkPod(always, inits(init1, init2, init3), foo1)

	// A sidecar's exit: three sidecars, the third with a rule, and a
	// regular container running.
	r1, r2 := ctr("restartable-init-1", sidecar), ctr("restartable-init-2", sidecar)
	r3 := ctr("restartable-init-3", sidecar, withRestartAllRule(1))
	sidecarPod := mkPod(always, inits(r1, r2, r3), foo1)

	// A regular container's exit beside three running sidecars.
	r3plain := ctr("restartable-init-3", sidecar)
	foo3never := ctr("foo3", withPolicy(cNever), withRestartAllRule(1))
	regularPod := mkPod(always, inits(r1, r2, r3plain), foo1, foo2, foo3never)

	runRuleCases(t, []ruleCase{
		{name: "R-7.2 no container exited under a RestartAllContainers rule: nothing is reset",
			pod:      plain,
			observed: obs(s1, inst("id1", foo1, 11, running, 0, "s1"), inst("id2", foo2, 12, running, 0, "s1"), inst("id3", foo3, 13, running, 0, "s1")),
			want:     "noop"},
		{name: "R-7.2 an exit code no rule matches restarts that container alone",
			pod:      plain,
			observed: obs(s1, inst("id1", foo1, 11, running, 0, "s1"), inst("id2", foo2, 12, running, 0, "s1"), inst("id3", foo3, 13, exited, 2, "s1")),
			want:     "sandbox=s1 attempt=0 start=[foo3:EXITED]"},
		{name: "R-7.3 an init container's exit: completed inits removed, the running sidecar stopped and removed, the source last",
			pod: initPod,
			observed: obs(s1, inst("initid1", init1, 11, exited, 0, "s1"), inst("initid2", init2, 12, running, 0, "s1"),
				inst("initid3", init3, 13, exited, 1, "s1")),
			want: "sandbox=s1 attempt=0 reset=[init1/initid1 init2/initid2:kill init3/initid3:source]"},
		{name: "R-7.3 a sidecar's exit: the regular container first, then the other sidecars, the source last",
			pod: sidecarPod,
			observed: obs(s1, inst("initid1", r1, 11, running, 0, "s1"), inst("initid2", r2, 12, running, 0, "s1"),
				inst("initid3", r3, 13, exited, 1, "s1"), inst("id1", foo1, 14, running, 0, "s1")),
			want: "sandbox=s1 attempt=0 reset=[foo1/id1:kill restartable-init-1/initid1:kill restartable-init-2/initid2:kill restartable-init-3/initid3:source]"},
		{name: "R-7.3 a regular container's exit: the other regular containers, then the sidecars, the source last",
			pod: regularPod,
			observed: obs(s1, inst("initid1", r1, 11, running, 0, "s1"), inst("initid2", r2, 12, running, 0, "s1"), inst("initid3", r3plain, 13, running, 0, "s1"),
				inst("id1", foo1, 14, running, 0, "s1"), inst("id2", foo2, 15, running, 0, "s1"), inst("id3", foo3never, 16, exited, 1, "s1")),
			want: "sandbox=s1 attempt=0 reset=[foo1/id1:kill foo2/id2:kill restartable-init-1/initid1:kill restartable-init-2/initid2:kill restartable-init-3/initid3:kill foo3/id3:source]"},
		{name: "R-7.3 instances that exited before are removed too, a source's older ones before it",
			pod: plain,
			observed: obs(s1,
				inst("id1-past", foo1, 11, exited, 99, "s1"), inst("id2-past", foo2, 12, exited, 99, "s1"), inst("id3-past", foo3, 13, exited, 99, "s1"),
				inst("id1", foo1, 21, running, 0, "s1"), inst("id2", foo2, 22, running, 0, "s1"), inst("id3", foo3, 23, exited, 1, "s1")),
			want: "sandbox=s1 attempt=0 reset=[foo1/id1:kill foo1/id1-past foo2/id2:kill foo2/id2-past foo3/id3-past foo3/id3:source]"},
		{name: "R-7.3 every container removed: the first init container starts",
			pod:      initPod,
			observed: obs(s1),
			want:     "sandbox=s1 attempt=0 init=[init1:NOT_STARTED]"},
		{name: "R-7.3 every container removed: the regular containers start",
			pod:      plain,
			observed: obs(s1),
			want:     "sandbox=s1 attempt=0 start=[foo1:NOT_STARTED foo2:NOT_STARTED foo3:NOT_STARTED]"},
		{name: "R-7.3 the sandbox must be replaced: a new one first, nothing started",
			pod:      plain,
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("id3", foo3, 13, exited, 1, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1"},
		{name: "R-7.3 a created or unknown instance is stopped before it is removed",
			pod: plain,
			observed: obs(s1, inst("id1", foo1, 11, created, 0, "s1"), inst("id2", foo2, 12, unknown, 0, "s1"),
				inst("id3", foo3, 13, exited, 1, "s1")),
			want: "sandbox=s1 attempt=0 reset=[foo1/id1:kill foo2/id2:kill foo3/id3:source]"},
		{name: "R-7.3 only the newest instance's exit counts",
			pod:      plain,
			observed: obs(s1, inst("id3-past", foo3, 11, exited, 1, "s1"), inst("id1", foo1, 12, running, 0, "s1"), inst("id2", foo2, 12, running, 0, "s1"), inst("id3", foo3, 13, running, 0, "s1")),
			want:     "noop"},
	})
}

// RestartingAll and CouldRestartAll answer as the plan acts.
func TestRestartingAll(t *testing.T) {
	foo := ctr("foo", withPolicy(cNever), withRestartAllRule(7))
	pod := mkPod(always, nil, foo, ctr("bar"))
	if !plan.CouldRestartAll(pod.GetSpec()) || plan.CouldRestartAll(mkPod(always, nil, ctr("bar")).GetSpec()) {
		t.Error("CouldRestartAll does not follow the rules")
	}
	s1 := sbs(sb("s1", 10, ready, 0))
	for _, tc := range []struct {
		name string
		obs  *syncpodv1.ObservedPod
		want bool
	}{
		{"matching exit", obs(s1, inst("a", foo, 11, exited, 7, "s1")), true},
		{"other exit", obs(s1, inst("a", foo, 11, exited, 8, "s1")), false},
		{"running", obs(s1, inst("a", foo, 11, running, 0, "s1")), false},
		{"removed", obs(s1), false},
	} {
		if got := plan.RestartingAll(pod, tc.obs); got != tc.want {
			t.Errorf("%s: RestartingAll = %v, want %v", tc.name, got, tc.want)
		}
	}
	if ok, why := plan.RestartsAfterExit(pod.GetSpec(), foo, 7); !ok || why != "restart rule 0 (RestartAllContainers on exit code In [7]) matched" {
		t.Errorf("RestartsAfterExit = %v, %q", ok, why)
	}
}
