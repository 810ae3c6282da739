package prober

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fakeExec answers exec probes from a script per command word and records
// when each command ran.
type fakeExec struct {
	mu    sync.Mutex
	codes map[string]func(n int) (int32, error) // by cmd[0]; n counts calls from 1
	calls map[string][]time.Time
}

func newFakeExec() *fakeExec {
	return &fakeExec{codes: map[string]func(int) (int32, error){}, calls: map[string][]time.Time{}}
}

func (f *fakeExec) ExecSync(ctx context.Context, id string, cmd []string, _ time.Duration) (int32, error) {
	f.mu.Lock()
	f.calls[cmd[0]] = append(f.calls[cmd[0]], time.Now())
	n := len(f.calls[cmd[0]])
	fn := f.codes[cmd[0]]
	f.mu.Unlock()
	if fn == nil {
		return 0, nil
	}
	return fn(n)
}

func (f *fakeExec) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls[cmd])
}

func execProbe(cmd string, period, failure, success, delay int32) *syncpodv1.Probe {
	return &syncpodv1.Probe{
		Handler:             &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{cmd}}},
		PeriodSeconds:       period,
		FailureThreshold:    failure,
		SuccessThreshold:    success,
		InitialDelaySeconds: delay,
	}
}

// podWith returns a host-network pod with one container "app" and an
// observed state where instance id of it runs since started.
func podWith(c *syncpodv1.Container, id string, started time.Time) (*syncpodv1.Pod, *syncpodv1.ObservedPod) {
	c.Name, c.Image = "app", "busybox"
	pod := &syncpodv1.Pod{Uid: "u1", Name: "p", Spec: &syncpodv1.PodSpec{HostNetwork: true, Containers: []*syncpodv1.Container{c}}}
	obs := &syncpodv1.ObservedPod{
		Uid:       "u1",
		Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, HostNetwork: true, CreatedAt: timestamppb.New(started)}},
		Containers: []*syncpodv1.ObservedContainer{{
			Id: id, Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "s1",
			CreatedAt: timestamppb.New(started), StartedAt: timestamppb.New(started),
		}},
	}
	return pod, obs
}

type changes struct {
	mu sync.Mutex
	n  int
}

func (c *changes) inc(string) { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *changes) get() int   { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

func only(t *testing.T, m *Manager) *syncpodv1.ContainerProbeResults {
	t.Helper()
	rs := m.Results("u1")
	if len(rs) != 1 {
		t.Fatalf("Results = %v, want one container", rs)
	}
	return rs[0]
}

func TestLivenessFailsAfterFailureThresholdThenHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newFakeExec()
		ex.codes["live"] = func(int) (int32, error) { return 1, nil }
		var ch changes
		m := New(Options{Exec: ex, OnChange: ch.inc})
		defer m.Stop()
		pod, obs := podWith(&syncpodv1.Container{LivenessProbe: execProbe("live", 5, 3, 0, 0)}, "c1", time.Now())
		m.Sync(pod, obs)
		synctest.Wait()
		if got := only(t, m).GetLiveness(); got != syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS {
			t.Fatalf("liveness before the threshold = %v, want the initial SUCCESS", got)
		}
		time.Sleep(10 * time.Second) // attempts at 0, 5, 10 s: third failure
		synctest.Wait()
		if got := only(t, m).GetLiveness(); got != syncpodv1.ProbeResult_PROBE_RESULT_FAILURE {
			t.Fatalf("liveness after 3 failures = %v, want FAILURE", got)
		}
		if ch.get() != 1 {
			t.Fatalf("OnChange called %d times, want 1", ch.get())
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := ex.count("live"); n != 3 {
			t.Fatalf("liveness probed %d times, want 3 then on hold until the container is replaced", n)
		}
		// A new container instance gets a fresh worker and initial result.
		pod, obs = podWith(&syncpodv1.Container{LivenessProbe: execProbe("live", 5, 3, 0, 0)}, "c2", time.Now())
		m.Sync(pod, obs)
		synctest.Wait()
		r := only(t, m)
		if r.GetContainerId() != "c2" || r.GetLiveness() != syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS {
			t.Fatalf("after replacement: %v", r)
		}
	})
}

func TestReadinessStartsFailedAndNeedsSuccessThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newFakeExec()
		m := New(Options{Exec: ex})
		defer m.Stop()
		pod, obs := podWith(&syncpodv1.Container{ReadinessProbe: execProbe("ready", 2, 0, 2, 4)}, "c1", time.Now())
		m.Sync(pod, obs)
		synctest.Wait()
		r := only(t, m)
		if r.GetReadiness() != syncpodv1.ProbeResult_PROBE_RESULT_FAILURE || r.GetLiveness() != syncpodv1.ProbeResult_PROBE_RESULT_UNSPECIFIED {
			t.Fatalf("initial results = %v, want readiness FAILURE and no liveness", r)
		}
		if ex.count("ready") != 0 {
			t.Fatal("probed before initial_delay_seconds")
		}
		time.Sleep(4 * time.Second) // first attempt at 4 s
		synctest.Wait()
		if ex.count("ready") != 1 || only(t, m).GetReadiness() != syncpodv1.ProbeResult_PROBE_RESULT_FAILURE {
			t.Fatalf("after one success: %d attempts, readiness %v; want 1 and still FAILURE (threshold 2)", ex.count("ready"), only(t, m).GetReadiness())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if only(t, m).GetReadiness() != syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS {
			t.Fatal("readiness not SUCCESS after two successes")
		}
	})
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newFakeExec()
		ex.codes["start"] = func(n int) (int32, error) {
			if n < 3 {
				return 1, nil
			}
			return 0, nil
		}
		m := New(Options{Exec: ex})
		defer m.Stop()
		pod, obs := podWith(&syncpodv1.Container{
			StartupProbe:   execProbe("start", 1, 10, 0, 0),
			LivenessProbe:  execProbe("live", 1, 3, 0, 0),
			ReadinessProbe: execProbe("ready", 1, 3, 0, 0),
		}, "c1", time.Now())
		m.Sync(pod, obs)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if ex.count("live") != 0 || ex.count("ready") != 0 {
			t.Fatalf("liveness/readiness ran %d/%d times before startup succeeded", ex.count("live"), ex.count("ready"))
		}
		if r := only(t, m); r.GetStartup() != syncpodv1.ProbeResult_PROBE_RESULT_UNSPECIFIED {
			t.Fatalf("startup = %v before it concluded", r.GetStartup())
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		r := only(t, m)
		if r.GetStartup() != syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS || r.GetReadiness() != syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS {
			t.Fatalf("after startup: %v", r)
		}
		if ex.count("start") != 3 {
			t.Fatalf("startup probed %d times, want 3: it stops once it succeeded", ex.count("start"))
		}
		if ex.count("live") == 0 {
			t.Fatal("liveness never ran after startup succeeded")
		}
	})
}

func TestProbeErrorsChangeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newFakeExec()
		ex.codes["live"] = func(int) (int32, error) { return 0, errors.New("container not found") }
		m := New(Options{Exec: ex})
		defer m.Stop()
		pod, obs := podWith(&syncpodv1.Container{LivenessProbe: execProbe("live", 1, 1, 0, 0)}, "c1", time.Now())
		m.Sync(pod, obs)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if r := only(t, m); r.GetLiveness() != syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS {
			t.Fatalf("liveness = %v after errors only, want the initial SUCCESS", r.GetLiveness())
		}
		if ex.count("live") < 10 {
			t.Fatalf("only %d attempts: errors must not stop probing", ex.count("live"))
		}
	})
}

func TestExecTimeoutIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newFakeExec()
		ex.codes["live"] = func(int) (int32, error) { return 0, context.DeadlineExceeded }
		m := New(Options{Exec: ex})
		defer m.Stop()
		pod, obs := podWith(&syncpodv1.Container{LivenessProbe: execProbe("live", 1, 1, 0, 0)}, "c1", time.Now())
		m.Sync(pod, obs)
		synctest.Wait()
		if r := only(t, m); r.GetLiveness() != syncpodv1.ProbeResult_PROBE_RESULT_FAILURE {
			t.Fatalf("liveness = %v after a timeout, want FAILURE", r.GetLiveness())
		}
	})
}

func TestSyncStopsWorkersOfStoppedContainers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newFakeExec()
		m := New(Options{Exec: ex})
		defer m.Stop()
		pod, obs := podWith(&syncpodv1.Container{LivenessProbe: execProbe("live", 1, 3, 0, 0)}, "c1", time.Now())
		m.Sync(pod, obs)
		synctest.Wait()
		obs.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		m.Sync(pod, obs)
		synctest.Wait()
		n := ex.count("live")
		time.Sleep(time.Minute)
		synctest.Wait()
		if ex.count("live") != n {
			t.Fatal("an exited container is still probed")
		}
		if rs := m.Results("u1"); len(rs) != 0 {
			t.Fatalf("results of an exited container kept: %v", rs)
		}
	})
}

// outputExec is a fakeExec that also returns output.
type outputExec struct {
	*fakeExec
	output string
}

func (o outputExec) ExecSyncOutput(ctx context.Context, id string, cmd []string, to time.Duration) (int32, []byte, error) {
	code, err := o.ExecSync(ctx, id, cmd, to)
	return code, []byte(o.output), err
}

// TestUnhealthyEventPerFailedAttempt: every failed attempt reports the
// kubelet's Unhealthy message with the probe's output, before and after
// the threshold; successes report nothing.
func TestUnhealthyEventPerFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newFakeExec()
		ex.codes["check"] = func(n int) (int32, error) {
			if n == 2 {
				return 0, nil
			}
			return 1, nil
		}
		var mu sync.Mutex
		var got []string
		m := New(Options{Exec: outputExec{ex, "cat: can't open '/tmp/healthy': No such file or directory\n"},
			OnUnhealthy: func(uid, c, msg string) {
				mu.Lock()
				got = append(got, uid+"/"+c+": "+msg)
				mu.Unlock()
			}})
		defer m.Stop()
		pod, obs := podWith(&syncpodv1.Container{ReadinessProbe: execProbe("check", 1, 3, 1, 0)}, "c1", time.Now())
		m.Sync(pod, obs)
		synctest.Wait()
		time.Sleep(2 * time.Second) // attempts at 0, 1 and 2 s: fail, succeed, fail
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := "u1/app: Readiness probe failed: cat: can't open '/tmp/healthy': No such file or directory\n"
		if len(got) != 2 || got[0] != want || got[1] != want {
			t.Errorf("events %q, want twice %q", got, want)
		}
	})
}

// TestResumedWorkersKeepWhatTheLastStatusReported: after a planner
// restart (a new Manager), the workers of a container the last status
// reported start from it: Started stays true without running the
// startup probe again, and a Ready container of a Ready pod stays Ready
// until failure_threshold failures; a container the status did not report
// Ready, or a pod that was not Ready, or another instance, starts as new.
func TestResumedWorkersKeepWhatTheLastStatusReported(t *testing.T) {
	ready := func(ok bool) *syncpodv1.PodCondition {
		s := syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE
		if ok {
			s = syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE
		}
		return &syncpodv1.PodCondition{Type: "Ready", Status: s}
	}
	last := func(id string, started, ctrReady, podReady bool) *syncpodv1.PodStatus {
		return &syncpodv1.PodStatus{
			Conditions:        []*syncpodv1.PodCondition{ready(podReady)},
			ContainerStatuses: []*syncpodv1.ContainerStatus{{Name: "app", ContainerId: id, Started: started, Ready: ctrReady}},
		}
	}
	const (
		success = syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
		failure = syncpodv1.ProbeResult_PROBE_RESULT_FAILURE
		unknown = syncpodv1.ProbeResult_PROBE_RESULT_UNSPECIFIED
	)
	for _, tc := range []struct {
		name                    string
		last                    *syncpodv1.PodStatus
		wantStartup, wantReady  syncpodv1.ProbeResult
		wantStartupProbeRunning bool
	}{
		{"no last status", nil, unknown, failure, true},
		{"started and ready in a ready pod", last("c1", true, true, true), success, success, false},
		{"started and ready, pod not ready", last("c1", true, true, false), success, failure, false},
		{"started, not ready", last("c1", true, false, true), success, failure, false},
		{"not started yet", last("c1", false, false, false), unknown, failure, true},
		{"another instance was reported", last("c0", true, true, true), unknown, failure, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ex := newFakeExec()
				ex.codes["start"] = func(int) (int32, error) { return 1, nil } // would never succeed
				ex.codes["ready"] = func(int) (int32, error) { return 1, nil }
				m := New(Options{Exec: ex})
				defer m.Stop()
				pod, obs := podWith(&syncpodv1.Container{StartupProbe: execProbe("start", 10, 30, 0, 0), ReadinessProbe: execProbe("ready", 10, 3, 0, 0)},
					"c1", time.Now().Add(-time.Hour))
				m.SyncFrom(pod, obs, tc.last)
				r := only(t, m)
				if r.GetStartup() != tc.wantStartup || r.GetReadiness() != tc.wantReady {
					t.Errorf("startup %v, readiness %v; want %v, %v", r.GetStartup(), r.GetReadiness(), tc.wantStartup, tc.wantReady)
				}
				synctest.Wait()
				if ran := ex.count("start") > 0; ran != tc.wantStartupProbeRunning {
					t.Errorf("startup probe ran: %v, want %v", ran, tc.wantStartupProbeRunning)
				}
				if tc.wantReady != success {
					return
				}
				// Failing readiness probes take it away only at the threshold.
				time.Sleep(15 * time.Second) // two failed attempts, at 0 s and 10 s; 20 s is the third
				synctest.Wait()
				if got := only(t, m).GetReadiness(); got != success {
					t.Fatalf("readiness after %d failures = %v, want still SUCCESS", ex.count("ready"), got)
				}
				time.Sleep(10 * time.Second)
				synctest.Wait()
				if got := only(t, m).GetReadiness(); got != failure {
					t.Errorf("readiness after %d failures = %v, want FAILURE", ex.count("ready"), got)
				}
			})
		})
	}
}
