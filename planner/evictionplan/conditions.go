package evictionplan

import (
	"slices"
	"strings"
)

// The pressure conditions, in the order the node reports them.
const (
	MemoryPressure = "MemoryPressure"
	DiskPressure   = "DiskPressure"
	PIDPressure    = "PIDPressure"
)

// NodeCondition is one pressure condition as the Node reports it
//
type NodeCondition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
	// Signals are the signals that put the node under this pressure;
	// empty when Status is false.
	Signals []Signal
}

// conditionTexts are the kubelet's reasons, and syncpod's messages, for
// each condition: when it does not hold, then when it does.
var conditionTexts = []struct {
	typ, okReason, okMessage, badReason, badMessage string
}{
	{MemoryPressure, "KubeletHasSufficientMemory", "syncpod has sufficient memory available",
		"KubeletHasInsufficientMemory", "syncpod has insufficient memory available"},
	{DiskPressure, "KubeletHasNoDiskPressure", "syncpod has no disk pressure",
		"KubeletHasDiskPressure", "syncpod has disk pressure"},
	{PIDPressure, "KubeletHasSufficientPID", "syncpod has sufficient PID available",
		"KubeletHasInsufficientPID", "syncpod has insufficient PID available"},
}

// NodeConditions are the three pressure conditions of state st, whose
// held conditions are conds (Outcome.Conditions): each true or false,
// with the kubelet's reason and a message naming the signals under
// pressure.
func NodeConditions(st State, conds []string) []NodeCondition {
	out := make([]NodeCondition, 0, len(conditionTexts))
	for _, t := range conditionTexts {
		if !slices.Contains(conds, t.typ) {
			out = append(out, NodeCondition{Type: t.typ, Reason: t.okReason, Message: t.okMessage})
			continue
		}
		sigs := slices.Clone(st.ConditionSignals[t.typ])
		msg := t.badMessage
		if len(sigs) > 0 {
			names := make([]string, len(sigs))
			for i, s := range sigs {
				names[i] = string(s)
			}
			msg += " (" + strings.Join(names, ", ") + ")"
		}
		out = append(out, NodeCondition{Type: t.typ, Status: true, Reason: t.badReason, Message: msg, Signals: sigs})
	}
	return out
}
