package plan_test

import (
	"testing"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

type ruleCase struct {
	name     string
	pod      *syncpodv1.Pod
	observed *syncpodv1.ObservedPod
	probes   []*syncpodv1.ContainerProbeResults
	want     string
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := plan.Compute(tc.pod, tc.observed, tc.probes)
			if r := render(got); r != tc.want {
				t.Errorf("Compute:\n got: %s\nwant: %s\nfull:\n%s", r, tc.want, renderFull(got))
			}
			checkWellFormed(t, tc.pod, got)
		})
	}
}

func probe(name, id string, liveness, startup syncpodv1.ProbeResult) *syncpodv1.ContainerProbeResults {
	return &syncpodv1.ContainerProbeResults{Name: name, ContainerId: id, Liveness: liveness, Startup: startup}
}

func TestSandboxRules(t *testing.T) {
	web, db := ctr("web"), ctr("db")
	initA := ctr("init-a")
	hostPod := mkPod(always, nil, web)
	hostPod.Spec.HostNetwork = true
	hostSandbox := sb("s1", 10, ready, 0)
	hostSandbox.HostNetwork, hostSandbox.Ip = true, ""
	noIP := sb("s1", 10, ready, 0)
	noIP.Ip = ""
	deleted := mkPod(always, nil, web)
	deleted.DeletionTime = ts(99)

	runRuleCases(t, []ruleCase{
		{name: "R-2.1 no sandbox: create attempt 0 with empty id", pod: mkPod(always, nil, web, db),
			want: "kill_pod(SANDBOX_CHANGED) create_sandbox(NO_SANDBOX) sandbox= attempt=0 start=[web:NEW_SANDBOX db:NEW_SANDBOX]"},
		{name: "R-2.2.1 two ready sandboxes: create attempt max+1 replacing the newest",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, ready, 0), sb("s2", 20, ready, 1)), inst("c1", web, 21, running, 0, "s2")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(MULTIPLE_READY) sandbox=s2 attempt=2 start=[web:NEW_SANDBOX]"},
		{name: "R-2.2.2 newest sandbox not ready: create attempt max+1",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, notReady, 3)), inst("c1", web, 11, exited, 137, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=4 start=[web:NEW_SANDBOX]"},
		{name: "R-2.2.2 unspecified sandbox state counts as not ready",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, syncpodv1.SandboxState_SANDBOX_STATE_UNSPECIFIED, 0))),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1 start=[web:NEW_SANDBOX]"},
		{name: "R-2.2.3 network mode changed: new sandbox, empty id",
			pod:      hostPod,
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, running, 0, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NETWORK_CHANGED) sandbox= attempt=1 start=[web:NEW_SANDBOX]"},
		{name: "R-2.2.4 pod-network sandbox without IP: recreate",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(noIP), inst("c1", web, 11, running, 0, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NO_IP) sandbox=s1 attempt=1 start=[web:NEW_SANDBOX]"},
		{name: "R-2.2.4 host-network sandbox needs no IP",
			pod:      hostPod,
			observed: obs(sbs(hostSandbox), inst("c1", web, 11, running, 0, "s1")),
			want:     "noop"},
		{name: "R-2.2.5 usable sandbox: attempt is the max over all sandboxes and id the newest",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, notReady, 5), sb("s2", 20, ready, 2)), inst("c1", web, 21, exited, 1, "s2")),
			want:     "sandbox=s2 attempt=5 start=[web:EXITED]"},
		{name: "R-2.3 a brand-new pod is killed too (harmless)", pod: mkPod(never, nil, web),
			want: "kill_pod(SANDBOX_CHANGED) create_sandbox(NO_SANDBOX) sandbox= attempt=0 start=[web:NEW_SANDBOX]"},
		{name: "R-2.4a policy Never, attempt>0 and statuses: no new sandbox, only the kill",
			pod:      mkPod(never, nil, web),
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c1", web, 11, exited, 1, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) sandbox=s1 attempt=1"},
		{name: "R-2.4a policy Never but no container status: sandbox recreated",
			pod:      mkPod(never, nil, web),
			observed: obs(sbs(sb("s1", 10, notReady, 0))),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1 start=[web:NEW_SANDBOX]"},
		{name: "R-2.4b OnFailure: succeeded containers are not started in the new sandbox",
			pod:      mkPod(onFailure, nil, web, db),
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c1", web, 11, exited, 0, "s1"), inst("c2", db, 12, exited, 1, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1 start=[db:NEW_SANDBOX]"},
		{name: "R-2.4b OnFailure and every container succeeded: no new sandbox",
			pod:      mkPod(onFailure, nil, web),
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c1", web, 11, exited, 0, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) sandbox=s1 attempt=1"},
		{name: "R-2.4b Always: succeeded containers are started again",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c1", web, 11, exited, 0, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1 start=[web:NEW_SANDBOX]"},
		{name: "R-2.4c init containers: only the first init container is started",
			pod:      mkPod(always, inits(initA, ctr("init-b")), web),
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c1", web, 11, running, 0, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1 init=[init-a:NEW_SANDBOX]"},
		{name: "R-2.4c a sidecar first is started first too",
			pod:  mkPod(always, inits(ctr("proxy", sidecar)), web),
			want: "kill_pod(SANDBOX_CHANGED) create_sandbox(NO_SANDBOX) sandbox= attempt=0 init=[proxy:NEW_SANDBOX]"},
		{name: "R-2.4d running containers are not listed as kills on a sandbox change",
			pod:      mkPod(always, nil, web, db),
			observed: obs(sbs(sb("s1", 10, ready, 0), sb("s2", 20, ready, 1)), inst("c1", web, 21, running, 0, "s2"), inst("c2", db, 22, running, 0, "s2")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(MULTIPLE_READY) sandbox=s2 attempt=2 start=[web:NEW_SANDBOX db:NEW_SANDBOX]"},
		{name: "R-2.5 a replaced sandbox's id is kept so SyncPod can emit SandboxChanged",
			pod:      mkPod(onFailure, nil, web),
			observed: obs(sbs(sb("old", 10, notReady, 0)), inst("c1", web, 11, exited, 1, "old")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=old attempt=1 start=[web:NEW_SANDBOX]"},
		{name: "R-2.4 (syncpod, after R-4.2) a deleted pod gets no new sandbox, only the kill",
			pod:      deleted,
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c1", web, 11, exited, 0, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) sandbox=s1 attempt=1"},
	})
}

func TestKillPodRules(t *testing.T) {
	web := ctr("web")
	initA := ctr("init-a")
	proxy := ctr("proxy", sidecar)
	s1 := sbs(sb("s1", 10, ready, 0))
	oom := inst("i1", initA, 11, exited, 0, "s1")
	oom.Reason = "OOMKilled"
	runRuleCases(t, []ruleCase{
		{name: "R-3.1 init container failed under Never: kill the pod, start nothing",
			pod:      mkPod(never, inits(initA), web),
			observed: obs(s1, inst("i1", initA, 11, exited, 1, "s1")),
			want:     "kill_pod(INIT_FAILED) sandbox=s1 attempt=0"},
		{name: "R-3.1 OOMKilled init container with code 0 counts as failed",
			pod:      mkPod(never, inits(initA), web),
			observed: obs(s1, oom),
			want:     "kill_pod(INIT_FAILED) sandbox=s1 attempt=0"},
		{name: "R-3.1 init failed under OnFailure: restarted, pod kept",
			pod:      mkPod(onFailure, inits(initA), web),
			observed: obs(s1, inst("i1", initA, 11, exited, 2, "s1")),
			want:     "sandbox=s1 attempt=0 init=[init-a:EXITED]"},
		{name: "R-3.2 every regular container finished under Never: kill the pod",
			pod:      mkPod(never, nil, web),
			observed: obs(s1, inst("c1", web, 11, exited, 0, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0"},
		{name: "R-3.2 a running sidecar does not keep the pod alive and its restart is dropped",
			pod:      mkPod(never, inits(proxy, ctr("logs", sidecar)), web),
			observed: obs(s1, inst("p1", proxy, 11, running, 0, "s1"), inst("l1", ctrOf("logs", sidecar), 12, exited, 1, "s1"), inst("c1", web, 13, exited, 0, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0"},
		{name: "R-3.3 kill_pod lists no running container individually",
			pod:      mkPod(onFailure, inits(proxy), web),
			observed: obs(s1, inst("p1", proxy, 11, running, 0, "s1"), inst("c1", web, 13, exited, 0, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0"},
	})
}

// ctrOf builds a fresh spec container (for instances of containers declared
// inline in a pod).
func ctrOf(name string, mods ...func(*syncpodv1.Container)) *syncpodv1.Container {
	return ctr(name, mods...)
}

func TestRegularContainerRules(t *testing.T) {
	web, db := ctr("web"), ctr("db")
	live := ctr("web", withLiveness)
	startup := ctr("web", withStartup)
	s1 := sbs(sb("s1", 10, ready, 0))
	changed := inst("c1", web, 11, running, 0, "s1")
	changed.SpecHash = "0000000000000000"
	deleted := mkPod(always, nil, web, db)
	deleted.DeletionTime = ts(50)
	runRuleCases(t, []ruleCase{
		{name: "R-4.1 an exited container that stays down gets no kill entry",
			pod:      mkPod(never, nil, web, db),
			observed: obs(s1, inst("c1", web, 11, exited, 0, "s1"), inst("c2", db, 12, running, 0, "s1")),
			want:     "noop"},
		{name: "R-4.2 no status: started", pod: mkPod(never, nil, web, db),
			observed: obs(s1, inst("c2", db, 12, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:NOT_STARTED]"},
		{name: "R-4.2 deletion timestamp: nothing is restarted", pod: deleted,
			observed: obs(s1, inst("c1", web, 11, exited, 1, "s1"), inst("c2", db, 12, running, 0, "s1")),
			want:     "noop"},
		{name: "R-4.2 deletion timestamp and nothing running: the pod is killed", pod: deleted,
			observed: obs(s1, inst("c1", web, 11, exited, 1, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0"},
		{name: "R-4.2 CREATED is started even under Never", pod: mkPod(never, nil, web),
			observed: obs(s1, inst("c1", web, 11, created, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:CREATED]"},
		{name: "R-4.2 UNKNOWN is killed and started even under Never", pod: mkPod(never, nil, web),
			observed: obs(s1, inst("c1", web, 11, unknown, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:UNKNOWN_STATE] kill=[web/c1:UNKNOWN_STATE]"},
		{name: "R-4.2 EXITED 0 under Never: not restarted", pod: mkPod(never, nil, web, db),
			observed: obs(s1, inst("c1", web, 11, exited, 0, "s1"), inst("c2", db, 12, running, 0, "s1")),
			want:     "noop"},
		{name: "R-4.2 EXITED 1 under Never: not restarted", pod: mkPod(never, nil, web, db),
			observed: obs(s1, inst("c1", web, 11, exited, 1, "s1"), inst("c2", db, 12, running, 0, "s1")),
			want:     "noop"},
		{name: "R-4.2 EXITED 0 under OnFailure: not restarted", pod: mkPod(onFailure, nil, web, db),
			observed: obs(s1, inst("c1", web, 11, exited, 0, "s1"), inst("c2", db, 12, running, 0, "s1")),
			want:     "noop"},
		{name: "R-4.2 EXITED 1 under OnFailure: restarted", pod: mkPod(onFailure, nil, web, db),
			observed: obs(s1, inst("c1", web, 11, exited, 1, "s1"), inst("c2", db, 12, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:EXITED]"},
		{name: "R-4.2 EXITED 0 under Always: restarted", pod: mkPod(always, nil, web),
			observed: obs(s1, inst("c1", web, 11, exited, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:EXITED]"},
		{name: "R-4.2 EXITED 0 with unspecified policy (Always): restarted", pod: mkPod(syncpodv1.RestartPolicy_RESTART_POLICY_UNSPECIFIED, nil, web),
			observed: obs(s1, inst("c1", web, 11, exited, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:EXITED]"},
		{name: "R-4.2 the newest status by name decides (older instance ignored)", pod: mkPod(onFailure, nil, web),
			observed: obs(s1, inst("c1", web, 11, exited, 1, "s1"), inst("c2", web, 15, running, 0, "s1")),
			want:     "noop"},
		{name: "R-4.3.1 definition changed: killed and restarted even under Never", pod: mkPod(never, nil, web),
			observed: obs(s1, changed),
			want:     "sandbox=s1 attempt=0 start=[web:SPEC_CHANGED] kill=[web/c1:SPEC_CHANGED]"},
		{name: "R-4.3.1 spec change wins over a liveness failure", pod: mkPod(always, nil, live),
			observed: obs(s1, &syncpodv1.ObservedContainer{Id: "c1", Name: "web", State: running, SpecHash: "x", CreatedAt: ts(11), SandboxId: "s1"}),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", fail, 0)},
			want:     "sandbox=s1 attempt=0 start=[web:SPEC_CHANGED] kill=[web/c1:SPEC_CHANGED]"},
		{name: "R-4.3.2 liveness failure: killed and restarted", pod: mkPod(always, nil, live),
			observed: obs(s1, inst("c1", live, 11, running, 0, "s1")),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "c1", fail, 0)},
			want:     "sandbox=s1 attempt=0 start=[web:LIVENESS_PROBE] kill=[web/c1:LIVENESS_PROBE]"},
		{name: "R-4.3.2 liveness failure under Never: killed only, then R-3.2 kills the pod", pod: mkPod(never, nil, live),
			observed: obs(s1, inst("c1", live, 11, running, 0, "s1")),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", fail, 0)},
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0 kill=[web/c1:LIVENESS_PROBE]"},
		{name: "R-4.3.3 startup failure: killed and restarted", pod: mkPod(onFailure, nil, startup),
			observed: obs(s1, inst("c1", startup, 11, running, 0, "s1")),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", 0, fail)},
			want:     "sandbox=s1 attempt=0 start=[web:STARTUP_PROBE] kill=[web/c1:STARTUP_PROBE]"},
		{name: "R-4.3 healthy running container is kept", pod: mkPod(always, nil, live),
			observed: obs(s1, inst("c1", live, 11, running, 0, "s1")),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", pass, pass)},
			want:     "noop"},
		{name: "R-4.4 a result for another instance id is no result", pod: mkPod(always, nil, live),
			observed: obs(s1, inst("c2", live, 11, running, 0, "s1")),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "c1", fail, 0)},
			want:     "noop"},
		{name: "R-4.4 no result (unspecified) never kills", pod: mkPod(always, nil, live),
			observed: obs(s1, inst("c1", live, 11, running, 0, "s1")),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", 0, 0)},
			want:     "noop"},
		{name: "R-4.4 a failure for a probe the spec does not define is ignored", pod: mkPod(always, nil, web),
			observed: obs(s1, inst("c1", web, 11, running, 0, "s1")),
			probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", fail, fail)},
			want:     "noop"},
		{name: "R-4.5 nothing kept and nothing to start: R-3.2 applies", pod: mkPod(onFailure, nil, web, db),
			observed: obs(s1, inst("c1", web, 11, exited, 0, "s1"), inst("c2", db, 12, exited, 0, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0"},
	})
}

func TestInitContainerRules(t *testing.T) {
	web := ctr("web")
	initA, initB := ctr("init-a"), ctr("init-b")
	proxy := ctr("proxy", sidecar)
	proxyStartup := ctr("proxy", sidecar, withStartup)
	proxyLive := ctr("proxy", sidecar, withLiveness)
	logs := ctr("logs", sidecar)
	s1 := sbs(sb("s1", 10, ready, 0))
	s2 := sbs(sb("s1", 10, notReady, 0), sb("s2", 20, ready, 1))
	changedProxy := inst("p1", proxy, 11, running, 0, "s1")
	changedProxy.SpecHash = "ffffffffffffffff"
	runRuleCases(t, []ruleCase{
		{name: "R-5.1 no init containers: initialised, regular containers started",
			pod: mkPod(always, nil, web), observed: obs(s1),
			want: "sandbox=s1 attempt=0 start=[web:NOT_STARTED]"},
		{name: "R-5.2 a stale regular container of an older sandbox does not count as initialised",
			pod: mkPod(always, inits(initA), web), observed: obs(s2, inst("c1", web, 11, exited, 137, "s1")),
			want: "sandbox=s2 attempt=1 init=[init-a:NOT_STARTED]"},
		{name: "R-5.2 an active regular container means initialised: a vanished init is not re-run",
			pod: mkPod(always, inits(initA), web), observed: obs(s1, inst("c1", web, 11, running, 0, "s1")),
			want: "noop"},
		{name: "R-5.3 no status, initialised, sidecar: started again",
			pod: mkPod(always, inits(proxy), web), observed: obs(s1, inst("c1", web, 11, running, 0, "s1")),
			want: "sandbox=s1 attempt=0 init=[proxy:NOT_STARTED]"},
		{name: "R-5.3 initialised: a finished regular init container is skipped even if failed",
			pod: mkPod(always, inits(initA), web), observed: obs(s1, inst("i1", initA, 11, exited, 1, "s1"), inst("c1", web, 12, running, 0, "s1")),
			want: "noop"},
		{name: "R-5.3 CREATED init container: started",
			pod: mkPod(never, inits(initA), web), observed: obs(s1, inst("i1", initA, 11, created, 0, "s1")),
			want: "sandbox=s1 attempt=0 init=[init-a:CREATED]"},
		{name: "R-5.3 RUNNING regular init container: wait",
			pod: mkPod(always, inits(initA, initB), web), observed: obs(s1, inst("i1", initA, 11, running, 0, "s1")),
			want: "noop"},
		{name: "R-5.3.1 sidecar startup probe without result: wait",
			pod: mkPod(always, inits(proxyStartup, initB), web), observed: obs(s1, inst("p1", proxyStartup, 11, running, 0, "s1")),
			want: "noop"},
		{name: "R-5.3.1 sidecar startup probe failure: kill and start again",
			pod: mkPod(always, inits(proxyStartup, initB), web), observed: obs(s1, inst("p1", proxyStartup, 11, running, 0, "s1")),
			probes: []*syncpodv1.ContainerProbeResults{probe("proxy", "", 0, fail)},
			want:   "sandbox=s1 attempt=0 init=[proxy:STARTUP_PROBE] kill=[proxy/p1:STARTUP_PROBE]"},
		{name: "R-5.3.2 sidecar started (startup passed): start the next init container",
			pod: mkPod(always, inits(proxyStartup, initB), web), observed: obs(s1, inst("p1", proxyStartup, 11, running, 0, "s1")),
			probes: []*syncpodv1.ContainerProbeResults{probe("proxy", "p1", 0, pass)},
			want:   "sandbox=s1 attempt=0 init=[init-b:NEXT_INIT]"},
		{name: "R-5.3.2 last init container is a started sidecar: initialised, regular containers start",
			pod: mkPod(always, inits(initA, proxy), web), observed: obs(s1, inst("i1", initA, 11, exited, 0, "s1"), inst("p1", proxy, 12, running, 0, "s1")),
			want: "sandbox=s1 attempt=0 start=[web:NOT_STARTED]"},
		{name: "R-5.3.3 sidecar definition changed: kill and restart (next init still started)",
			pod: mkPod(always, inits(proxy, initB), web), observed: obs(s1, changedProxy),
			want: "sandbox=s1 attempt=0 init=[proxy:SPEC_CHANGED init-b:NEXT_INIT] kill=[proxy/p1:SPEC_CHANGED]"},
		{name: "R-5.3.4 sidecar liveness failure: kill and restart, and it does not block the next init",
			pod: mkPod(always, inits(proxyLive, initB), web), observed: obs(s1, inst("p1", proxyLive, 11, running, 0, "s1")),
			probes: []*syncpodv1.ContainerProbeResults{probe("proxy", "", fail, 0)},
			want:   "sandbox=s1 attempt=0 init=[proxy:LIVENESS_PROBE init-b:NEXT_INIT] kill=[proxy/p1:LIVENESS_PROBE]"},
		{name: "R-5.3 EXITED sidecar: restarted whatever the pod policy",
			pod: mkPod(never, inits(proxy), web), observed: obs(s1, inst("p1", proxy, 11, exited, 0, "s1"), inst("c1", web, 12, running, 0, "s1")),
			want: "sandbox=s1 attempt=0 init=[proxy:EXITED]"},
		{name: "R-5.3 EXITED regular init failed under Always: started again",
			pod: mkPod(always, inits(initA), web), observed: obs(s1, inst("i1", initA, 11, exited, 3, "s1")),
			want: "sandbox=s1 attempt=0 init=[init-a:EXITED]"},
		{name: "R-5.3 EXITED regular init succeeded, not last: start the next",
			pod: mkPod(never, inits(initA, initB), web), observed: obs(s1, inst("i1", initA, 11, exited, 0, "s1")),
			want: "sandbox=s1 attempt=0 init=[init-b:NEXT_INIT]"},
		{name: "R-5.3 EXITED regular init succeeded, last: initialised",
			pod: mkPod(never, inits(initA, initB), web), observed: obs(s1, inst("i1", initA, 11, exited, 0, "s1"), inst("i2", initB, 12, exited, 0, "s1")),
			want: "sandbox=s1 attempt=0 start=[web:NOT_STARTED]"},
		{name: "R-5.3 UNKNOWN sidecar: kill and start again",
			pod: mkPod(never, inits(proxy), web), observed: obs(s1, inst("p1", proxy, 11, unknown, 0, "s1"), inst("c1", web, 12, running, 0, "s1")),
			want: "sandbox=s1 attempt=0 init=[proxy:UNKNOWN_STATE] kill=[proxy/p1:UNKNOWN_STATE]"},
		{name: "R-5.3 UNKNOWN regular init under Never: kill the pod",
			pod: mkPod(never, inits(initA), web), observed: obs(s1, inst("i1", initA, 11, unknown, 0, "s1")),
			want: "kill_pod(INIT_FAILED) sandbox=s1 attempt=0"},
		{name: "R-5.3 UNKNOWN regular init under OnFailure: kill and start again",
			pod: mkPod(onFailure, inits(initA), web), observed: obs(s1, inst("i1", initA, 11, unknown, 0, "s1")),
			want: "sandbox=s1 attempt=0 init=[init-a:UNKNOWN_STATE] kill=[init-a/i1:UNKNOWN_STATE]"},
		{name: "R-5.3 the active status is used: an init container of an older sandbox does not count",
			pod: mkPod(always, inits(initA, initB), web), observed: obs(s2, inst("i1", initA, 11, exited, 0, "s1")),
			want: "sandbox=s2 attempt=1 init=[init-a:NOT_STARTED]"},
		{name: "R-5.4 no init container has a status: start the first",
			pod: mkPod(always, inits(initA, initB), web), observed: obs(s1),
			want: "sandbox=s1 attempt=0 init=[init-a:NOT_STARTED]"},
		{name: "R-5.5 starts come out in spec order",
			pod:      mkPod(always, inits(proxy, initA, logs), web),
			observed: obs(s1, inst("i1", initA, 11, exited, 0, "s1"), inst("l1", logs, 12, exited, 1, "s1"), inst("c1", web, 13, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 init=[proxy:NOT_STARTED logs:EXITED]"},
		{name: "R-5.10 the newest algorithm applies: an exited active regular container means initialised",
			pod: mkPod(always, inits(initA), web), observed: obs(s1, inst("c1", web, 11, exited, 1, "s1")),
			want: "sandbox=s1 attempt=0 start=[web:EXITED]"},
		{name: "R-5.6 not initialised: regular containers are not looked at",
			pod: mkPod(always, inits(initA), web), observed: obs(s2, inst("c1", web, 11, exited, 1, "s1"), inst("i1", initA, 21, running, 0, "s2")),
			want: "noop"},
		{name: "R-5.6 pod killed by an init failure: regular containers are not looked at",
			pod: mkPod(never, inits(initA, initB), web), observed: obs(s1, inst("i1", initA, 11, exited, 0, "s1"), inst("i2", initB, 12, exited, 9, "s1")),
			want: "kill_pod(INIT_FAILED) sandbox=s1 attempt=0"},
		{name: "R-5.7 container-level OnFailure lets a failed init restart under pod Never",
			pod: mkPod(never, inits(ctr("init-a", withPolicy(cOnFailure))), web), observed: obs(s1, inst("i1", ctr("init-a", withPolicy(cOnFailure)), 11, exited, 1, "s1")),
			want: "sandbox=s1 attempt=0 init=[init-a:EXITED]"},
		{name: "R-5.7 container-level Never forbids an init restart under pod Always",
			pod: mkPod(always, inits(ctr("init-a", withPolicy(cNever))), web), observed: obs(s1, inst("i1", ctr("init-a", withPolicy(cNever)), 11, exited, 1, "s1")),
			want: "kill_pod(INIT_FAILED) sandbox=s1 attempt=0"},
		{name: "R-5.7 an exit-code rule restarts a failed init under pod Never",
			pod:      mkPod(never, inits(ctr("init-a", withPolicy(cNever), withRule(syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, 75))), web),
			observed: obs(s1, inst("i1", ctr("init-a", withPolicy(cNever), withRule(syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, 75)), 11, exited, 75, "s1")),
			want:     "sandbox=s1 attempt=0 init=[init-a:EXITED]"},
		{name: "R-5.7 deleted pod: a failed init container kills the pod",
			pod:      func() *syncpodv1.Pod { p := mkPod(always, inits(initA), web); p.DeletionTime = ts(1); return p }(),
			observed: obs(s1, inst("i1", initA, 11, exited, 1, "s1")),
			want:     "kill_pod(INIT_FAILED) sandbox=s1 attempt=0"},
	})
}

func TestChangeDetectionRules(t *testing.T) {
	web := ctr("web")
	s1 := sbs(sb("s1", 10, ready, 0))
	emptyHash := inst("c1", web, 11, running, 0, "s1")
	emptyHash.SpecHash = ""
	newImage := ctr("web", func(c *syncpodv1.Container) { c.Image = "busybox:1.37" })
	newEnv := ctr("web", func(c *syncpodv1.Container) { c.Env = []*syncpodv1.EnvVar{{Name: "A", Value: "1"}} })
	newProbe := ctr("web", withLiveness, func(c *syncpodv1.Container) {
		c.ImagePullPolicy = syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS
		c.RestartPolicy = cAlways
	})
	runRuleCases(t, []ruleCase{
		{name: "R-10.1 image changed: definition changed", pod: mkPod(always, nil, newImage),
			observed: obs(s1, inst("c1", web, 11, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:SPEC_CHANGED] kill=[web/c1:SPEC_CHANGED]"},
		{name: "R-10.1 syncpod: env changed is a definition change too", pod: mkPod(always, nil, newEnv),
			observed: obs(s1, inst("c1", web, 11, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 start=[web:SPEC_CHANGED] kill=[web/c1:SPEC_CHANGED]"},
		{name: "R-10.1 syncpod: probes, pull policy and restart policy are not hashed", pod: mkPod(always, nil, newProbe),
			observed: obs(s1, inst("c1", web, 11, running, 0, "s1")),
			want:     "noop"},
		{name: "R-10.2 recorded hash matches: kept", pod: mkPod(always, nil, web),
			observed: obs(s1, inst("c1", web, 11, running, 0, "s1")),
			want:     "noop"},
		{name: "R-10.2 no recorded hash: treated as changed", pod: mkPod(always, nil, web),
			observed: obs(s1, emptyHash),
			want:     "sandbox=s1 attempt=0 start=[web:SPEC_CHANGED] kill=[web/c1:SPEC_CHANGED]"},
	})
}

func TestRestartRuleRules(t *testing.T) {
	in, notIn := syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_NOT_IN
	s1 := sbs(sb("s1", 10, ready, 0))
	db := ctr("db")
	dbRun := inst("d1", db, 5, running, 0, "s1")
	one := func(policy syncpodv1.RestartPolicy, c *syncpodv1.Container, code int32) ruleCase {
		return ruleCase{pod: mkPod(policy, nil, c, db), observed: obs(s1, inst("c1", c, 11, exited, code, "s1"), dbRun)}
	}
	named := func(name, want string, rc ruleCase) ruleCase { rc.name, rc.want = name, want; return rc }
	runRuleCases(t, []ruleCase{
		named("R-12.1 rule In matches: restart despite container Never", "sandbox=s1 attempt=0 start=[web:EXITED]",
			one(always, ctr("web", withPolicy(cNever), withRule(in, 42)), 42)),
		named("R-12.1 rule In does not match: container Never applies", "noop",
			one(always, ctr("web", withPolicy(cNever), withRule(in, 42)), 1)),
		named("R-12.1 rule NotIn matches every other code", "sandbox=s1 attempt=0 start=[web:EXITED]",
			one(never, ctr("web", withPolicy(cNever), withRule(notIn, 0)), 3)),
		named("R-12.1 rule NotIn does not match its own codes", "noop",
			one(never, ctr("web", withPolicy(cNever), withRule(notIn, 0)), 0)),
		named("R-12.1 container OnFailure overrides pod Never", "sandbox=s1 attempt=0 start=[web:EXITED]",
			one(never, ctr("web", withPolicy(cOnFailure)), 1)),
		named("R-12.1 container Never overrides pod Always", "noop",
			one(always, ctr("web", withPolicy(cNever)), 1)),
		named("R-12.1 container Always overrides pod OnFailure on exit 0", "sandbox=s1 attempt=0 start=[web:EXITED]",
			one(onFailure, ctr("web", withPolicy(cAlways)), 0)),
		named("R-12.1 rules without a container policy are ignored", "noop",
			one(never, ctr("web", withRule(in, 42)), 42)),
		named("R-12.2 running container, liveness failure, container Never: killed, not restarted", "sandbox=s1 attempt=0 kill=[web/c1:LIVENESS_PROBE]",
			ruleCase{pod: mkPod(always, nil, ctr("web", withPolicy(cNever), withLiveness), db),
				observed: obs(s1, inst("c1", ctr("web", withPolicy(cNever), withLiveness), 11, running, 0, "s1"), dbRun),
				probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", fail, 0)}}),
		named("R-12.2 running container, liveness failure, container Always under pod Never: restarted", "sandbox=s1 attempt=0 start=[web:LIVENESS_PROBE] kill=[web/c1:LIVENESS_PROBE]",
			ruleCase{pod: mkPod(never, nil, ctr("web", withPolicy(cAlways), withLiveness), db),
				observed: obs(s1, inst("c1", ctr("web", withPolicy(cAlways), withLiveness), 11, running, 0, "s1"), dbRun),
				probes:   []*syncpodv1.ContainerProbeResults{probe("web", "", fail, 0)}}),
		named("R-12.2 UNKNOWN init container: only its container policy counts", "sandbox=s1 attempt=0 init=[init-a:UNKNOWN_STATE] kill=[init-a/i1:UNKNOWN_STATE]",
			ruleCase{pod: mkPod(never, inits(ctr("init-a", withPolicy(cOnFailure))), db),
				observed: obs(s1, inst("i1", ctr("init-a", withPolicy(cOnFailure)), 11, unknown, 0, "s1"))}),
		named("R-12.3 new sandbox skips a succeeded container whose own policy is OnFailure",
			"kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1 start=[db:NEW_SANDBOX]",
			ruleCase{pod: mkPod(always, nil, ctr("web", withPolicy(cOnFailure)), db),
				observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c1", ctr("web", withPolicy(cOnFailure)), 11, exited, 0, "s1"))}),
	})
}

func TestMessages(t *testing.T) {
	s1 := sbs(sb("s1", 10, ready, 0))
	web := ctr("web")
	cases := []struct {
		name     string
		pod      *syncpodv1.Pod
		observed *syncpodv1.ObservedPod
		want     string
	}{
		{"exit under OnFailure", mkPod(onFailure, nil, web), obs(s1, inst("c1", web, 11, exited, 1, "s1")),
			"container web exited with 1; restart policy OnFailure"},
		{"exit under a container policy", mkPod(never, nil, ctr("web", withPolicy(cAlways))), obs(s1, inst("c1", ctr("web", withPolicy(cAlways)), 11, exited, 0, "s1")),
			"container web exited with 0; container restart policy Always"},
		{"exit matched by a rule", mkPod(never, nil, ctr("web", withPolicy(cNever), withRule(syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, 42, 43))),
			obs(s1, inst("c1", ctr("web", withPolicy(cNever), withRule(syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, 42, 43)), 11, exited, 43, "s1")),
			"container web exited with 43; restart rule 0 (Restart on exit code In [42 43]) matched"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := plan.Compute(tc.pod, tc.observed, nil)
			if len(a.GetContainersToStart()) != 1 || a.GetContainersToStart()[0].GetMessage() != tc.want {
				t.Fatalf("got %s, want one start with message %q", renderFull(a), tc.want)
			}
		})
	}
	a := plan.Compute(mkPod(never, nil, web), obs(s1, inst("c1", web, 11, unknown, 0, "s1")), nil)
	if got, want := a.GetContainersToKill()[0].GetMessage(), `Container is in "unknown" state, try killing it before restart`; got != want {
		t.Errorf("unknown-state kill message = %q, want %q", got, want)
	}
}

// TestRemovedContainerRules: a running container whose name left the spec
// (pods are mutable) is killed with REMOVED_FROM_SPEC and not restarted; its
// preStop hook is the executor's job. Exited ones are left to GC.
func TestRemovedContainerRules(t *testing.T) {
	web, side, gone := ctr("web"), ctr("side", sidecar), ctr("gone")
	runRuleCases(t, []ruleCase{
		{name: "R-9.6 running container removed from the spec: killed, the rest kept",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, running, 0, "s1"), inst("c2", gone, 11, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 kill=[gone/c2:REMOVED_FROM_SPEC]"},
		{name: "R-9.6 removed sidecar: killed while the init walk goes on",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c0", side, 10, running, 0, "s1"), inst("c1", web, 11, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 kill=[side/c0:REMOVED_FROM_SPEC]"},
		{name: "R-9.6 removed container already exited: nothing to do",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, running, 0, "s1"), inst("c2", gone, 11, exited, 0, "s1")),
			want:     "noop"},
		{name: "R-9.6 R-3.2 only a removed container runs: the pod is killed and its container too",
			pod:      mkPod(onFailure, nil, web),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, exited, 0, "s1"), inst("c2", gone, 11, running, 0, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0 kill=[gone/c2:REMOVED_FROM_SPEC]"},
		{name: "R-9.6 R-2.4 new sandbox: the pod kill stops the removed container",
			pod:      mkPod(always, nil, web),
			observed: obs(sbs(sb("s1", 10, notReady, 0)), inst("c2", gone, 11, running, 0, "s1")),
			want:     "kill_pod(SANDBOX_CHANGED) create_sandbox(NOT_READY) sandbox=s1 attempt=1 start=[web:NEW_SANDBOX]"},
	})
}

// TestSandboxConfigChangeRules: a sandbox records the SandboxHash it was
// created with; a pod whose pod-level settings changed since gets a new
// sandbox like the kubelet's podSandboxChanged (R-2.2, R-2.4, R-2.5: the
// old sandbox's id is kept so SandboxChanged is reported). A sandbox with
// no recorded hash (older syncpod) is kept.
func TestSandboxConfigChangeRules(t *testing.T) {
	web := ctr("web")
	pod := mkPod(always, nil, web)
	hashed := func(h string) *syncpodv1.ObservedSandbox {
		s := sb("s1", 10, ready, 2)
		s.ConfigHash = h
		return s
	}
	hostPID := mkPod(always, nil, web)
	hostPID.Spec.HostPid = true
	never := mkPod(never, nil, web)
	never.Spec.HostIpc = true
	runningWeb := inst("c1", web, 11, running, 0, "s1")
	runRuleCases(t, []ruleCase{
		{name: "R-2.2.5 recorded hash matches: keep the sandbox",
			pod: pod, observed: obs(sbs(hashed(plan.SandboxHash(pod))), runningWeb), want: "noop"},
		{name: "R-2.2 hostPID changed: new sandbox replacing s1, all containers restart",
			pod: hostPID, observed: obs(sbs(hashed(plan.SandboxHash(pod))), runningWeb),
			want: "kill_pod(SANDBOX_CHANGED) create_sandbox(CONFIG_CHANGED) sandbox=s1 attempt=3 start=[web:NEW_SANDBOX]"},
		{name: "R-2.2 no recorded hash (older sandbox): kept",
			pod: hostPID, observed: obs(sbs(hashed("")), runningWeb), want: "noop"},
		{name: "R-2.4a policy Never: the changed pod is only killed",
			pod: never, observed: obs(sbs(hashed(plan.SandboxHash(pod))), runningWeb),
			want: "kill_pod(SANDBOX_CHANGED) sandbox=s1 attempt=3"},
	})
	got := plan.Compute(hostPID, obs(sbs(hashed(plan.SandboxHash(pod))), runningWeb), nil)
	if got.GetSandboxConfigHash() != plan.SandboxHash(hostPID) {
		t.Errorf("sandbox_config_hash %q, want the new pod's %q", got.GetSandboxConfigHash(), plan.SandboxHash(hostPID))
	}
	if got := plan.Compute(pod, nil, nil); got.GetSandboxConfigHash() != plan.SandboxHash(pod) {
		t.Errorf("R-2.1 first sandbox: sandbox_config_hash %q, want %q", got.GetSandboxConfigHash(), plan.SandboxHash(pod))
	}
}

func TestEphemeralRules(t *testing.T) {
	web, dbg := ctr("web"), ctr("debugger")
	withDebugger := func(p *syncpodv1.Pod) *syncpodv1.Pod {
		p.Spec.EphemeralContainers = []*syncpodv1.Container{dbg}
		return p
	}
	deleted := withDebugger(mkPod(always, nil, web))
	deleted.DeletionTime = ts(99)
	never := withDebugger(mkPod(never, nil, web))
	initA := ctr("init-a")

	runRuleCases(t, []ruleCase{
		{name: "R-6.1 no instance: started, nothing else touched",
			pod:      withDebugger(mkPod(always, nil, web)),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 ephemeral=[debugger:EPHEMERAL]"},
		{name: "R-6.1 an exited instance is never restarted",
			pod:      withDebugger(mkPod(always, nil, web)),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, running, 0, "s1"), inst("c2", dbg, 12, exited, 1, "s1")),
			want:     "noop"},
		{name: "R-6.1 an instance from an older sandbox counts too",
			pod:      withDebugger(mkPod(always, nil, web)),
			observed: obs(sbs(sb("s1", 10, notReady, 0), sb("s2", 20, ready, 1)), inst("c1", dbg, 11, exited, 137, "s1"), inst("c2", web, 21, running, 0, "s2")),
			want:     "noop"},
		{name: "R-6.1 started while an init container still runs",
			pod:      withDebugger(mkPod(always, inits(initA), web)),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", initA, 11, running, 0, "s1")),
			want:     "sandbox=s1 attempt=0 ephemeral=[debugger:EPHEMERAL]"},
		{name: "R-6.1 a new sandbox starts the pod's own containers first",
			pod:  withDebugger(mkPod(always, nil, web)),
			want: "kill_pod(SANDBOX_CHANGED) create_sandbox(NO_SANDBOX) sandbox= attempt=0 start=[web:NEW_SANDBOX]"},
		{name: "R-6.2 a deleted pod starts none", pod: deleted,
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, running, 0, "s1")),
			want:     "noop"},
		{name: "R-6.2 a running ephemeral container does not keep the pod (R-3.2)", pod: never,
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, exited, 0, "s1"), inst("c2", dbg, 12, running, 0, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0"},
		{name: "R-6.2 a pod being stopped does not start one", pod: never,
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, exited, 0, "s1")),
			want:     "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0"},
		{name: "a running ephemeral container is in the spec: not killed as removed",
			pod:      withDebugger(mkPod(always, nil, web)),
			observed: obs(sbs(sb("s1", 10, ready, 0)), inst("c1", web, 11, running, 0, "s1"), inst("c2", dbg, 12, running, 0, "s1")),
			want:     "noop"},
	})
}
