package service

import (
	"context"

	"github.com/syncpod/syncpod/planner/evictionplan"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// NodeConditions reports the node's pressure conditions as the eviction
// manager's last round found them (the sync loop's Syncer implements it).
type NodeConditions interface {
	// NodeConditions are MemoryPressure, DiskPressure and PIDPressure,
	// and whether the eviction manager runs.
	NodeConditions() ([]evictionplan.NodeCondition, bool)
}

// GetNodeConditions answers the eviction manager's pressure conditions
// without one, all three are false.
func (s *Service) GetNodeConditions(_ context.Context, _ *plannerv1.GetNodeConditionsRequest) (*plannerv1.GetNodeConditionsResponse, error) {
	var conds []evictionplan.NodeCondition
	var on bool
	if s.conditions != nil {
		conds, on = s.conditions.NodeConditions()
	}
	if conds == nil {
		conds = evictionplan.NodeConditions(evictionplan.State{}, nil)
	}
	resp := &plannerv1.GetNodeConditionsResponse{EvictionManager: on}
	for _, c := range conds {
		pc := &plannerv1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		for _, sig := range c.Signals {
			pc.Signals = append(pc.Signals, string(sig))
		}
		resp.Conditions = append(resp.Conditions, pc)
	}
	return resp, nil
}
