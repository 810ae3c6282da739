package node

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// Pressure is which pressure conditions hold, as the planner's eviction
// manager reports them: the same thresholds that evict decide
// them.
type Pressure struct {
	Memory, Disk, PID bool
	// Conditions are the planner's conditions, whose reasons and
	// messages (naming the signals) the Node shows; a type missing here
	// gets the default words.
	Conditions []*plannerv1.NodeCondition
}

// pressureOf reads the planner's answer.
func pressureOf(resp *plannerv1.GetNodeConditionsResponse) Pressure {
	p := Pressure{Conditions: resp.GetConditions()}
	for _, c := range resp.GetConditions() {
		switch corev1.NodeConditionType(c.GetType()) {
		case corev1.NodeMemoryPressure:
			p.Memory = c.GetStatus()
		case corev1.NodeDiskPressure:
			p.Disk = c.GetStatus()
		case corev1.NodePIDPressure:
			p.PID = c.GetStatus()
		}
	}
	return p
}

// condition is the planner's condition of type typ; nil when it gave
// none.
func (p Pressure) condition(typ corev1.NodeConditionType) *plannerv1.NodeCondition {
	for _, c := range p.Conditions {
		if c.GetType() == string(typ) {
			return c
		}
	}
	return nil
}

// signals names the signals under pressure, for the log.
func (p Pressure) signals() []string {
	var out []string
	for _, c := range p.Conditions {
		if c.GetStatus() {
			out = append(out, c.GetSignals()...)
		}
	}
	return out
}

// pressureState is the last pressure the planner reported, which
// admission uses between two reads.
type pressureState struct {
	mu       sync.Mutex
	reported Pressure
	// failing is set while the planner does not answer, so the agent
	// warns once per outage.
	failing bool
}

// last is what the planner last reported (no pressure before the
// first answer).
func (t *pressureState) last() Pressure {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reported
}

// currentPressure asks the planner for the node's pressure conditions
// . A planner without GetNodeConditions (older than this agent)
// counts as no pressure; one that does not answer leaves the last known
// conditions. Either is logged at warn once, until it answers again.
func (a *Agent) currentPressure(ctx context.Context) Pressure {
	t := a.pressure
	if a.o.Planner == nil {
		return Pressure{}
	}
	ctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	resp, err := a.o.Planner.GetNodeConditions(ctx, &plannerv1.GetNodeConditionsRequest{})
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		old := status.Code(err) == codes.Unimplemented
		if old {
			t.reported = Pressure{}
		}
		if !t.failing {
			if old {
				a.o.Logger.Warn("the planner does not report node conditions (older than this agent): no pressure is reported", "err", err)
			} else {
				a.o.Logger.Warn("cannot read the node's pressure conditions from the planner; keeping the last known", "err", err)
			}
		}
		t.failing = true
		return t.reported
	}
	if t.failing {
		a.o.Logger.Info("the planner reports the node's pressure conditions again")
	}
	t.failing = false
	t.reported = pressureOf(resp)
	return t.reported
}

// admitUnderPressure is the kubelet's eviction admission: under memory
// pressure only pods that are not BestEffort are admitted; under disk or
// PID pressure none is. The message names the conditions.
func admitUnderPressure(pr Pressure, qos corev1.PodQOSClass) (bool, string) {
	var conds []string
	if pr.Memory {
		conds = append(conds, string(corev1.NodeMemoryPressure))
	}
	if pr.Disk {
		conds = append(conds, string(corev1.NodeDiskPressure))
	}
	if pr.PID {
		conds = append(conds, string(corev1.NodePIDPressure))
	}
	if len(conds) == 0 || (!pr.Disk && !pr.PID && qos != corev1.PodQOSBestEffort) {
		return true, ""
	}
	return false, fmt.Sprintf("The node had condition: [%s].", strings.Join(conds, ", "))
}
