package timeline

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/internal/clocktest"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
func at(c *clocktest.Clock, d time.Duration) *timestamppb.Timestamp {
	return timestamppb.New(c.Now().Add(d))
}

// TestTimelineStagesOffsetsAndMetrics: a PLEG-triggered sync records its
// trigger, event time, queueing, each marked stage and each CRI call with
// offsets from the trigger, becomes the pod's last sync, and feeds the
// stage and trigger-lag histograms.
func TestTimelineStagesOffsetsAndMetrics(t *testing.T) {
	c := clocktest.New(clocktest.Start)
	reg := prometheus.NewPedanticRegistry()
	r, err := New(reg, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	r.SetLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	event := c.Now()
	c.Advance(ms(4))
	r.Triggered("u1", SourcePLEG+"CONTAINER_DIED", event)
	c.Advance(ms(1))
	r.Triggered("u1", SourceResync, time.Time{}) // coalesces: the first trigger is reported
	c.Advance(ms(2))
	s := r.Begin("u1") // queued 3 ms
	end := s.Stage(StageStatusRead)
	c.Advance(ms(10))
	end()
	end = s.Stage(StagePlan)
	c.Advance(ms(1))
	end()
	end = s.Stage(StageExecutor)
	s.CRICalls([]*executorv1.CriCallTiming{
		{Operation: "create_container", StartedAt: at(c, ms(1)), Duration: durationpb.New(ms(30))},
		{Operation: "start_container", StartedAt: at(c, ms(31)), Duration: durationpb.New(ms(40))},
	})
	c.Advance(ms(75))
	end()
	s.End(nil)
	if r.Last("u2") != nil {
		t.Fatal("a pod never synced has a timeline")
	}
	got := r.Last("u1")
	if got.GetTrigger() != "pleg:CONTAINER_DIED" || !got.GetEventAt().AsTime().Equal(event) || !got.GetTriggeredAt().AsTime().Equal(event.Add(ms(4))) {
		t.Fatalf("trigger %q event_at %v triggered_at %v", got.GetTrigger(), got.GetEventAt().AsTime(), got.GetTriggeredAt().AsTime())
	}
	want := "queued@0s+3ms status_read@3ms+10ms plan@13ms+1ms executor@14ms+75ms cri:create_container@15ms+30ms cri:start_container@45ms+40ms"
	if got := Format(got); got != want {
		t.Fatalf("stages\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(logs.String(), "stages=\""+want+"\"") || !strings.Contains(logs.String(), "trigger=pleg:CONTAINER_DIED") {
		t.Fatalf("debug log lacks the timeline: %s", logs.String())
	}
	if got.GetTotal().AsDuration() != ms(89) || got.GetError() != "" {
		t.Fatalf("total %v error %q, want 89ms and none", got.GetTotal().AsDuration(), got.GetError())
	}
	if n := testutil.CollectAndCount(r.stage); n != 7 { // 6 stages + total
		t.Fatalf("%d stage series, want 7", n)
	}
	if n := testutil.CollectAndCount(r.lag); n != 1 {
		t.Fatalf("%d lag series, want 1", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("metrics lint: %v %v", problems, err)
	}

	// The returned timeline is a copy; a failed timer-woken sync replaces it.
	got.Stages = nil
	s = r.Begin("u1")
	s.End(errors.New("executor: unavailable"))
	got = r.Last("u1")
	if got.GetTrigger() != SourceTimer || got.GetError() != "executor: unavailable" || len(got.GetStages()) != 1 {
		t.Fatalf("timer sync %v", got)
	}
	r.Forget("u1")
	if r.Last("u1") != nil {
		t.Fatal("a forgotten pod keeps its timeline")
	}
}

// TestNilRecorderRecordsNothing: the syncer calls a nil recorder and a
// nil sync unconditionally.
func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Triggered("u", SourceStore, time.Time{})
	s := r.Begin("u")
	s.Stage(StagePlan)()
	s.CRICalls([]*executorv1.CriCallTiming{{Operation: "x"}})
	s.End(nil)
	r.Forget("u")
	if r.Last("u") != nil {
		t.Fatal("a nil recorder returned something")
	}
}
