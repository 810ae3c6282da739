package runner

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// killWithExitingSidecar runs a pod kill of a pod whose regular container
// app takes 5 s to stop (its preStop sleeps) and whose sidecar proxy exits
// with 1 while app stops, finished at exitedAt on the back-off clock. keep
// is the kill's sidecars_to_keep_running. It returns the answer, the ids
// app and proxy had, and the ids stopped, in order.
func killWithExitingSidecar(t *testing.T, keep bool, exitedAt func(e *env) time.Time) (resp *executorv1.ApplyActionsResponse, appID, proxyID string, stopped []string, e *env) {
	e = newEnv(t, busybox)
	app := ctr("app")
	app.Lifecycle = &syncpodv1.Lifecycle{PreStop: sleepHook(5)}
	pod := testPod([]*syncpodv1.Container{sidecar("proxy")}, app)
	o := runningPod(t, e, pod)
	for _, c := range o.GetContainers() {
		switch c.GetName() {
		case "app":
			appID = c.GetId()
		case "proxy":
			proxyID = c.GetId()
		}
	}
	a := &syncpodv1.PodActions{KillPod: true}
	if keep {
		a.SidecarsToKeepRunning = starts("proxy")
	}
	var wg sync.WaitGroup
	wg.Go(func() { resp = e.apply(t, pod, o, a) })
	// app's hook sleeps, proxy waits for its turn.
	synctest.Wait()
	e.rt.ExitContainer(proxyID, 1, "Error", exitedAt(e).UnixNano())
	wg.Wait()
	for _, s := range e.rt.Stops() {
		stopped = append(stopped, s.ID)
	}
	return resp, appID, proxyID, stopped, e
}

// a sidecar kept running that exits while the regular container
// stops is started again, and its new instance is stopped in its turn,
// after the regular container.
func TestKillPodRestartsAKeptSidecarThatExitsBeforeItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resp, appID, proxyID, stopped, e := killWithExitingSidecar(t, true, func(e *env) time.Time { return e.clock.Now().Add(-time.Hour) })
		want := "PRE_STOP_HOOK app SUCCEEDED\nKILL_CONTAINER app SUCCEEDED\nSTART_INIT_CONTAINER proxy SUCCEEDED\nKILL_CONTAINER proxy SUCCEEDED\nKILL_POD demo SUCCEEDED\n"
		got := summary(stepsOnly(resp, executorv1.Step_STEP_PRE_STOP_HOOK, executorv1.Step_STEP_KILL_CONTAINER,
			executorv1.Step_STEP_START_INIT_CONTAINER, executorv1.Step_STEP_KILL_POD))
		if got != want {
			t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
		}
		var newID string
		for _, s := range resp.GetSteps() {
			if s.GetStep() == executorv1.Step_STEP_START_INIT_CONTAINER {
				newID = s.GetContainerId()
			}
		}
		if newID == "" || newID == proxyID {
			t.Fatalf("restarted proxy has id %q (was %q), want a new instance", newID, proxyID)
		}
		if want := []string{appID, newID}; !slices.Equal(stopped, want) {
			t.Errorf("stops %v, want app's %s then the new proxy's %s", stopped, appID, newID)
		}
		if cfg := e.rt.CreatedConfig(newID); cfg.GetMetadata().GetAttempt() != 1 {
			t.Errorf("new proxy instance's attempt (restart count) %d, want 1", cfg.GetMetadata().GetAttempt())
		}
	})
}

// a kept sidecar in crash-loop back-off is not started
// before its back-off ends; the kill reports the back-off, stops nothing of
// the exited sidecar, and still succeeds.
func TestKillPodKeepsTheBackOffOfAKeptSidecar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resp, appID, _, stopped, _ := killWithExitingSidecar(t, true, func(e *env) time.Time { return e.clock.Now() })
		want := "PRE_STOP_HOOK app SUCCEEDED\nKILL_CONTAINER app SUCCEEDED\nSTART_INIT_CONTAINER proxy SKIPPED CrashLoopBackOff\nKILL_POD demo SUCCEEDED\n"
		got := summary(stepsOnly(resp, executorv1.Step_STEP_PRE_STOP_HOOK, executorv1.Step_STEP_KILL_CONTAINER,
			executorv1.Step_STEP_START_INIT_CONTAINER, executorv1.Step_STEP_KILL_POD))
		if got != want {
			t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
		}
		if resp.GetRetryAt() == nil {
			t.Error("no retry_at for the back-off")
		}
		if want := []string{appID}; !slices.Equal(stopped, want) {
			t.Errorf("stops %v, want app's only", stopped)
		}
	})
}

// without sidecars_to_keep_running (the kubelet's way) a sidecar
// that exits during the kill stays down.
func TestKillPodLeavesAnExitedSidecarDownUnlessKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resp, _, _, _, _ := killWithExitingSidecar(t, false, func(e *env) time.Time { return e.clock.Now().Add(-time.Hour) })
		if got := summary(stepsOnly(resp, executorv1.Step_STEP_START_INIT_CONTAINER)); got != "" {
			t.Errorf("starts during the kill:\n%s", got)
		}
	})
}

// the liveness probe of a sidecar kept running goes
// on during the kill: an instance whose probe fails is stopped, as a
// running pod's sync would stop it, and started again. The instance
// running when the kill began counts as started; one the kill starts is
// probed from its start, its startup probe first.
func TestKillPodProbesAKeptSidecar(t *testing.T) {
	exec := func(cmd string) *syncpodv1.Probe {
		return &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{cmd}}},
			PeriodSeconds: 1, FailureThreshold: 2}
	}
	for _, tc := range []struct {
		name              string
		startup, liveness *syncpodv1.Probe
		// want are the probes run, each "first:" (the instance running
		// when the kill began) or "new:" (the one it started), in order
		// and without repeats.
		want []string
	}{
		{"liveness", nil, exec("alive"), []string{"first:alive", "new:alive"}},
		{"startup, then liveness", exec("started"), exec("alive"), []string{"first:alive", "new:started", "new:alive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, busybox)
				app := ctr("app")
				app.Lifecycle = &syncpodv1.Lifecycle{PreStop: sleepHook(8)}
				proxy := sidecar("proxy")
				proxy.StartupProbe, proxy.LivenessProbe = tc.startup, tc.liveness
				pod := testPod([]*syncpodv1.Container{proxy}, app)
				o := runningPod(t, e, pod)
				var first string
				for _, c := range o.GetContainers() {
					if c.GetName() == "proxy" {
						first = c.GetId()
					}
				}
				var mu sync.Mutex
				var ran []string
				e.rt.ExecFunc = func(id string, cmd []string) (int32, []byte, error) {
					mu.Lock()
					defer mu.Unlock()
					which := "new:"
					if id == first {
						which = "first:"
					}
					if r := which + cmd[0]; len(ran) == 0 || ran[len(ran)-1] != r {
						ran = append(ran, r)
					}
					if id == first {
						return 1, []byte("not alive"), nil
					}
					return 0, nil, nil
				}
				resp := e.apply(t, pod, o, &syncpodv1.PodActions{KillPod: true, SidecarsToKeepRunning: starts("proxy")})
				got := summary(stepsOnly(resp, executorv1.Step_STEP_KILL_CONTAINER, executorv1.Step_STEP_START_INIT_CONTAINER))
				want := "KILL_CONTAINER app SUCCEEDED\nKILL_CONTAINER proxy SUCCEEDED Unhealthy\nSTART_INIT_CONTAINER proxy SUCCEEDED\nKILL_CONTAINER proxy SUCCEEDED\n"
				if got != want {
					t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
				}
				for _, s := range resp.GetSteps() {
					if msg := "Init container proxy failed liveness probe, will be restarted"; s.GetReason() == "Unhealthy" && (s.GetContainerId() != first || s.GetMessage() != msg) {
						t.Errorf("probe kill of %s %q, want of %s %q", s.GetContainerId(), s.GetMessage(), first, msg)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(ran, tc.want) {
					t.Errorf("probes run %v, want %v", ran, tc.want)
				}
			})
		})
	}
}
