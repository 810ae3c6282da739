package status

import (
	"strings"
	"testing"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestRestartAllContainersStatus follows a pod through a
// reset as the kubelet reports it: the AllContainersRestarting condition is
// true from the matching exit until every instance is gone; a removed
// container waits with reason RestartingAllContainers, its restart count
// one more; the pod stays Running and Initialized while its init
// container runs again; restart counts never go down and the last
// termination is kept once new instances run.
func TestRestartAllContainersStatus(t *testing.T) {
	worker := ctr("worker")
	worker.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
	worker.RestartPolicyRules = []*syncpodv1.ContainerRestartRule{{
		Action:    syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS,
		ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, Values: []int32{42}},
	}}
	setup := ctr("setup")
	setup.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
	pod := mkPod([]*syncpodv1.Container{setup}, []*syncpodv1.Container{ctr("app"), worker},
		policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER))

	var prev *syncpodv1.PodStatus
	step := func(o *syncpodv1.ObservedPod, want string) {
		t.Helper()
		st := Compute(Input{Pod: pod, Observed: o, Previous: prev, Now: t0.Add(time.Minute)})
		var parts []string
		for _, cs := range append(st.GetInitContainerStatuses(), st.GetContainerStatuses()...) {
			parts = append(parts, summary(cs))
		}
		got := strings.TrimPrefix(st.GetPhase().String(), "POD_PHASE_") + " " + strings.Join(parts, ", ") + " | " + conds(st)
		if got != want {
			t.Errorf("\n got: %s\nwant: %s", got, want)
		}
		prev = st
	}
	step(observed(inst("setup", 1, exited, 0, 0), inst("app", 5, running, 0, 0), inst("worker", 6, running, 0, 0)),
		"RUNNING setup=terminated:Completed/0 ready, app=running ready, worker=running ready | Initialized=T ContainersReady=T Ready=T AllContainersRestarting=F")
	step(observed(inst("setup", 1, exited, 0, 0), inst("app", 5, running, 0, 0), inst("worker", 6, exited, 42, 0)),
		"RUNNING setup=terminated:Completed/0 ready, app=running ready, worker=terminated:Error/42 | Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady AllContainersRestarting=T:RestartAllContainersStarted")
	// Part of the reset done: app removed, the source still there.
	step(observed(inst("setup", 1, exited, 0, 0), inst("worker", 6, exited, 42, 0)),
		"RUNNING setup=terminated:Completed/0 ready, app=waiting:RestartingAllContainers last=terminated:RestartingAllContainers/137 r1, worker=terminated:Error/42 | Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady AllContainersRestarting=T:RestartAllContainersStarted")
	// Every instance removed.
	step(observed(),
		"RUNNING setup=waiting:RestartingAllContainers last=terminated:RestartingAllContainers/137 r1, app=waiting:PodInitializing last=terminated:RestartingAllContainers/137 r1, worker=waiting:RestartingAllContainers last=terminated:RestartingAllContainers/137 r1 | Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady AllContainersRestarting=F")
	// The init container runs again (its restart count from the logs):
	// Pending, as the kubelet's getPhase says of a running init container.
	step(observed(inst("setup", 20, running, 0, 1)),
		"PENDING setup=running last=terminated:RestartingAllContainers/137 r1, app=waiting:PodInitializing last=terminated:RestartingAllContainers/137 r1, worker=waiting:PodInitializing last=terminated:RestartingAllContainers/137 r1 | Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady AllContainersRestarting=F")
	step(observed(inst("setup", 20, exited, 0, 1), inst("app", 25, running, 0, 1), inst("worker", 26, running, 0, 1)),
		"RUNNING setup=terminated:Completed/0 last=terminated:RestartingAllContainers/137 r1 ready, app=running last=terminated:RestartingAllContainers/137 r1 ready, worker=running last=terminated:RestartingAllContainers/137 r1 ready | Initialized=T ContainersReady=T Ready=T AllContainersRestarting=F")
}

// TestNoAllContainersRestartingConditionWithoutTheRule: a pod none
// of whose containers has a RestartAllContainers rule reports no such
// condition.
func TestNoAllContainersRestartingConditionWithoutTheRule(t *testing.T) {
	st := Compute(Input{Pod: mkPod(nil, []*syncpodv1.Container{ctr("app")}), Observed: observed(inst("app", 1, running, 0, 0)), Now: t0})
	if got := conds(st); strings.Contains(got, ConditionAllContainersRestarting) {
		t.Errorf("conditions %s", got)
	}
}
