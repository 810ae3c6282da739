package store

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The watch metrics read the store they were made for: an open
// subscription is a watcher.
func TestWatchMetricsReadTheStore(t *testing.T) {
	s, _, _ := openTest(t, nil)
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewMetrics(reg, s); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(t.Context(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	want := `
# HELP syncpod_planner_watch_resyncs_total WatchPods subscribers that fell behind and were sent RESYNC instead of the changes they missed.
# TYPE syncpod_planner_watch_resyncs_total counter
syncpod_planner_watch_resyncs_total 0
# HELP syncpod_planner_watchers Open WatchPods subscriptions.
# TYPE syncpod_planner_watchers gauge
syncpod_planner_watchers 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
