package syncer

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/syncpod/syncpod/planner/plan"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// probingExec is the fake executor whose exec probes answer code, or fail
// to run (an error) while code is negative.
type probingExec struct {
	execClient
	code *atomic.Int32
}

func (p probingExec) ExecSync(context.Context, string, []string, time.Duration) (int32, error) {
	if c := p.code.Load(); c >= 0 {
		return c, nil
	}
	return 0, errors.New("the runtime did not answer")
}

func podReady(rec *plannerv1.PodRecord) syncpodv1.ConditionStatus {
	for _, c := range rec.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c.GetStatus()
		}
	}
	return syncpodv1.ConditionStatus_CONDITION_STATUS_UNSPECIFIED
}

// TestAPlannerRestartKeepsContainersReady: a planner that restarts
// (a new syncer on the same store) while a Ready pod's probes cannot yet
// run reports it Ready and Started all along, as the kubelet does since
// 1.35: no NotReady from the restart alone. Its readiness probe's
// own failures, failure_threshold of them, then take readiness away.
func TestAPlannerRestartKeepsContainersReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "p.db")
		code := &atomic.Int32{}
		o := runningObserved(uid)
		// The fake PLEG knows the pod before the syncer's first sync, as
		// the PLEG does the running pods when a planner starts.
		withProbes := func(opts *Options) {
			opts.Executor = probingExec{execClient: opts.Executor.(execClient), code: code}
			opts.PLEG.(plegClient).f.set(o)
		}
		probe := func(cmd string) *syncpodv1.Probe {
			return &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{cmd}}}, PeriodSeconds: 10, FailureThreshold: 3}
		}
		pod := webPod()
		pod.Spec.Containers[0].ReadinessProbe = probe("ready")
		pod.Spec.Containers[0].StartupProbe = probe("started")
		o.Containers[0].SpecHash = plan.SpecHash(pod.GetSpec().GetContainers()[0])
		record := func(e *env) *plannerv1.PodRecord {
			rec, err := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: uid})
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}

		e := newEnvAt(t, path, withProbes)
		e.apply(t, pod)
		time.Sleep(25 * time.Second) // startup, then readiness, succeed
		settled(t, "the pod Ready", func() bool { return podReady(record(e)) == syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE })
		e.stop()

		code.Store(-1) // after the restart no probe can run
		e = newEnvAt(t, path, withProbes)
		sub := subscribe(t, e)
		e.s.trigger(uid, "test", time.Time{})
		time.Sleep(time.Minute)
		for _, rec := range append(modified(t, sub), record(e)) {
			cs := rec.GetStatus().GetContainerStatuses()
			if podReady(rec) != syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE || len(cs) != 1 || !cs[0].GetReady() || !cs[0].GetStarted() {
				t.Fatalf("after the restart: pod Ready %v, containers %v; want Ready and Started kept", podReady(rec), cs)
			}
		}

		code.Store(1) // the readiness probe fails: three times take readiness away
		time.Sleep(35 * time.Second)
		settled(t, "the pod NotReady after its probe failed three times", func() bool {
			return podReady(record(e)) == syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE
		})
	})
}
