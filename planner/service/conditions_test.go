package service

import (
	"context"
	"slices"
	"testing"

	"github.com/syncpod/syncpod/planner/evictionplan"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// fakeConditions answers what the eviction manager's last round found.
type fakeConditions struct {
	conds []evictionplan.NodeCondition
	on    bool
}

func (f fakeConditions) NodeConditions() ([]evictionplan.NodeCondition, bool) { return f.conds, f.on }

// GetNodeConditions answers the eviction manager's conditions as
// they are, and all three false when the planner has none.
func TestGetNodeConditions(t *testing.T) {
	underMemory := evictionplan.NodeConditions(evictionplan.State{
		ConditionSignals: map[string][]evictionplan.Signal{evictionplan.MemoryPressure: {evictionplan.MemoryAvailable}},
	}, []string{evictionplan.MemoryPressure})
	type cond struct {
		typ     string
		status  bool
		reason  string
		signals []string
	}
	for _, tc := range []struct {
		name   string
		source NodeConditions
		wantOn bool
		want   []cond
	}{
		{"no eviction manager", nil, false, []cond{
			{"MemoryPressure", false, "KubeletHasSufficientMemory", nil},
			{"DiskPressure", false, "KubeletHasNoDiskPressure", nil},
			{"PIDPressure", false, "KubeletHasSufficientPID", nil}}},
		{"memory pressure", fakeConditions{underMemory, true}, true, []cond{
			{"MemoryPressure", true, "KubeletHasInsufficientMemory", []string{"memory.available"}},
			{"DiskPressure", false, "KubeletHasNoDiskPressure", nil},
			{"PIDPressure", false, "KubeletHasSufficientPID", nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := openStore(t)
			c := serveService(t, Options{Pods: st, Conditions: tc.source})
			resp, err := c.GetNodeConditions(context.Background(), &plannerv1.GetNodeConditionsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetEvictionManager() != tc.wantOn {
				t.Errorf("eviction_manager %v, want %v", resp.GetEvictionManager(), tc.wantOn)
			}
			got := resp.GetConditions()
			if len(got) != len(tc.want) {
				t.Fatalf("conditions %v, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.GetType() != w.typ || g.GetStatus() != w.status || g.GetReason() != w.reason || !slices.Equal(g.GetSignals(), w.signals) || g.GetMessage() == "" {
					t.Errorf("condition %d = %v, want %+v", i, g, w)
				}
			}
		})
	}
}
