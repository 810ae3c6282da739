package podsync

import (
	"encoding/json"
	"fmt"

	"github.com/syncpod/syncpod/planner/events"
	"github.com/syncpod/syncpod/planner/status"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The kubelet's resize event reasons.
const (
	ReasonResizeStarted    = "ResizeStarted"
	ReasonResizeCompleted  = "ResizeCompleted"
	ReasonResizeDeferred   = "ResizeDeferred"
	ReasonResizeInfeasible = "ResizeInfeasible"
	ReasonResizeError      = "ResizeError"
)

// withResizeEvents adds the kubelet's resize events for the change from
// the stored status to w's: ResizeDeferred or ResizeInfeasible
// (Warning) when a resize starts to wait or waits for another reason or
// generation, ResizeStarted when one starts being carried out,
// ResizeError (Warning) when an attempt fails with a new message, and
// ResizeCompleted when none is in progress any more. Each message is the
// kubelet's: "Pod resize <what>: " and the pod's container resources as
// JSON (those asked for when the resize waits, those admitted otherwise),
// with the generation and the error.
func withResizeEvents(in Input, w Work) Work {
	if w.Status == nil {
		return w
	}
	pod := runningPod(in)
	prevPending, pending := conditionOf(in.Record.GetStatus(), status.ConditionPodResizePending), conditionOf(w.Status, status.ConditionPodResizePending)
	prevRunning, running := conditionOf(in.Record.GetStatus(), status.ConditionPodResizeInProgress), conditionOf(w.Status, status.ConditionPodResizeInProgress)
	gen := pod.GetGeneration()
	add := func(typ syncpodv1.EventType, reason, what, errMsg string) {
		of := pod
		if reason == ReasonResizeDeferred || reason == ReasonResizeInfeasible {
			of = in.Record.GetPod() // what waits: the resources asked for
		}
		w.Events = append(w.Events, events.New(pod, typ, reason, "", fmt.Sprintf("Pod resize %s: %s", what, resizeSummary(of, gen, errMsg)), in.Now))
	}
	if pending != nil && (prevPending == nil || prevPending.GetReason() != pending.GetReason() ||
		in.Record.GetStatus().GetObservedGeneration() != w.Status.GetObservedGeneration()) {
		reason := ReasonResizeDeferred
		if pending.GetReason() == "Infeasible" {
			reason = ReasonResizeInfeasible
		}
		add(syncpodv1.EventType_EVENT_TYPE_WARNING, reason, pending.GetReason(), pending.GetMessage())
	}
	switch {
	case running != nil && prevRunning == nil:
		add(syncpodv1.EventType_EVENT_TYPE_NORMAL, ReasonResizeStarted, "started", "")
	case running == nil && prevRunning != nil:
		add(syncpodv1.EventType_EVENT_TYPE_NORMAL, ReasonResizeCompleted, "completed", "")
	}
	if running.GetReason() == status.ReasonError && (prevRunning.GetReason() != status.ReasonError || prevRunning.GetMessage() != running.GetMessage()) {
		add(syncpodv1.EventType_EVENT_TYPE_WARNING, ReasonResizeError, "error", running.GetMessage())
	}
	return w
}

func conditionOf(st *syncpodv1.PodStatus, typ string) *syncpodv1.PodCondition {
	for _, c := range st.GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// resizeSummary is the kubelet's JSON summary of a pod's container
// resources in resize events.
func resizeSummary(pod *syncpodv1.Pod, generation int64, errMsg string) string {
	type list map[string]string
	type requirements struct {
		Limits   list `json:"limits,omitempty"`
		Requests list `json:"requests,omitempty"`
	}
	type alloc struct {
		Name      string       `json:"name"`
		Resources requirements `json:"resources,omitempty"`
	}
	var sum struct {
		InitContainers []alloc `json:"initContainers,omitempty"`
		Containers     []alloc `json:"containers,omitempty"`
		Generation     int64   `json:"generation"`
		Error          string  `json:"error,omitempty"`
	}
	toList := func(l *syncpodv1.ResourceList) list {
		out := list{}
		if v := l.GetCpu(); v != "" {
			out["cpu"] = v
		}
		if v := l.GetMemory(); v != "" {
			out["memory"] = v
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	of := func(c *syncpodv1.Container) alloc {
		r := c.GetResources()
		return alloc{Name: c.GetName(), Resources: requirements{Limits: toList(r.GetLimits()), Requests: toList(r.GetRequests())}}
	}
	for _, c := range pod.GetSpec().GetInitContainers() {
		sum.InitContainers = append(sum.InitContainers, of(c))
	}
	for _, c := range pod.GetSpec().GetContainers() {
		sum.Containers = append(sum.Containers, of(c))
	}
	sum.Generation, sum.Error = generation, errMsg
	b, err := json.Marshal(sum)
	if err != nil {
		return ""
	}
	return string(b)
}
