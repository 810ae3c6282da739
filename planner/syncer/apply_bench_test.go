package syncer

import (
	"context"
	"strconv"
	"testing"
	"time"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

// BenchmarkApplyToExecutor times the planner's share of a new pod's path
// from the store to the runtime: store.Apply (the write and its fsync,
// what ApplyPod waits for before it acknowledges) and then, in the sync
// loop, the store's watch waking the pod's worker, the status read (an
// in-memory PLEG here), the plan and the executor call, up to the moment
// the executor is asked (an in-memory fake: no RPC). Reported per pod:
// stored-ms (Apply's return), to-executor-ms (Apply's start to the
// executor's call) and wake-ms (their difference: what the sync loop adds
// before the first CRI call could begin). The store file is on the test's
// temporary directory, so stored-ms is that file system's fsync.
func BenchmarkApplyToExecutor(b *testing.B) {
	e := newEnvAt(b, "", nil)
	asked := make(chan time.Time, 1)
	e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
		select {
		case asked <- time.Now():
		default:
		}
		return &executorv1.ApplyActionsResponse{}
	})
	var stored, toExec time.Duration
	n := 0
	for b.Loop() {
		p := webPod()
		p.Uid, p.Name = "", "web-"+strconv.Itoa(n)
		t0 := time.Now()
		if _, _, err := e.store.Apply(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		stored += time.Since(t0)
		select {
		case at := <-asked:
			toExec += at.Sub(t0)
		case <-time.After(10 * time.Second):
			b.Fatal("the executor was not asked within 10 s")
		}
		n++
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	b.ReportMetric(ms(stored), "stored-ms")
	b.ReportMetric(ms(toExec), "to-executor-ms")
	b.ReportMetric(ms(toExec-stored), "wake-ms")
}
