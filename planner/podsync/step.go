package podsync

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/syncpod/syncpod/planner/allocation"
	"github.com/syncpod/syncpod/planner/events"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/status"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Messages of the kills this package makes up (plan.Compute makes the
// others); they become the executor's kill message and the events'.
const (
	MessageFinished = "the pod has finished"
	MessageDeleted  = "the pod was deleted"
	MessageOrphan   = "the pod is not desired (orphan)"
)

// EvictionGracePeriodSeconds is the grace period an evicted pod is killed
// with, whatever it asks for (R-9.5's override): the kubelet's eviction
// manager evicts for local storage (an emptyDir over its sizeLimit) with
// 1 s (immediateEvictionGracePeriodSeconds in v1.37), so a preStop hook
// gets at most 1 s, and each stop the 2-second floor.
const EvictionGracePeriodSeconds int64 = 1

// Input is everything one step looks at. Nothing in it is modified and
// nothing in the returned Work aliases it except Pod.
type Input struct {
	// Record is the pod's stored record: the desired pod, its previous
	// status. Nil for a runtime pod nobody wants (an orphan).
	Record *plannerv1.PodRecord
	// Observed is the runtime's state of the pod; nil means nothing exists.
	Observed *syncpodv1.ObservedPod
	// Probes are the current probe results (none for a deleted pod).
	Probes []*syncpodv1.ContainerProbeResults
	// Applied is the executor's answer to the Work.Apply of the first
	// step of this sync; nil in the first step.
	Applied *Applied
	// Now is the time of the step (for the second step: when the
	// executor answered).
	Now time.Time
	// Evicted, when set, is why the pod is evicted (the eviction check
	// found an emptyDir over its sizeLimit): it fails with reason Evicted
	// and what runs of it is killed.
	Evicted string
	// NodeShutdown, when set, is the grace period in seconds the node's
	// graceful shutdown kills the pod with (its group's budget, or the
	// pod's own grace when shorter): it fails with reason Terminated
	// and what runs of it is killed with that grace.
	NodeShutdown *int64
	// PressureGracePeriod, set with Evicted, says the eviction is for
	// node pressure: the kill's grace period in seconds (1 for a
	// hard threshold), and the status's DisruptionTarget condition.
	PressureGracePeriod *int64
	// SidecarsStayDown, when set, stops a terminating pod as the kubelet
	// does: a sidecar that exits before its turn to stop stays down. By
	// default the kill of a terminating pod (deleted, or finished) lists
	// its sidecars to keep running until their turn.
	SidecarsStayDown bool
}

// Applied is a change set the executor carried out and its answer.
type Applied struct {
	// Actions are the change set sent (the first step's Work.Apply).
	Actions *syncpodv1.PodActions
	// Result is the executor's answer: step results, retry_at.
	Result *executorv1.ApplyActionsResponse
}

// Removal is what to remove from the runtime.
type Removal struct {
	// Containers are container ids to remove.
	Containers []string
	// Sandboxes are sandbox ids to remove.
	Sandboxes []string
	// Forget, when set, names a pod that is gone for good (deleted, or an
	// orphan): once everything above is removed, the executor removes its
	// log directory and back-off entries too.
	Forget *PodRef
}

// PodRef names a pod for the executor to forget.
type PodRef struct {
	UID, Namespace, Name string
}

// Empty reports whether r asks for nothing.
func (r Removal) Empty() bool { return len(r.Containers)+len(r.Sandboxes) == 0 && r.Forget == nil }

// forget names a pod for the executor to forget, or nil when its identity
// is not one the executor takes (a runtime pod another tool labelled): its
// leftovers then stay rather than fail the removal.
func forget(uid, namespace, name string) *PodRef {
	namespace = validation.NamespaceOrDefault(namespace)
	if validation.UIDProblem(uid) != "" || validation.NamespaceProblem(namespace) != "" || validation.NameProblem(name) != "" {
		return nil
	}
	return &PodRef{UID: uid, Namespace: namespace, Name: name}
}

// Work is what a step asks the caller to do, in this order: carry out
// Apply (then step again) or Remove; refresh the pod's volumes when
// RefreshVolumes is set; commit Status, Events and LastActions in one
// transaction; when Err is set, fail the sync (it is retried with
// back-off); after a successful Remove, remove the pod's volume directory
// when RemoveVolumes is set, then with Drop drop the pod from the store
// and forget it; sync again at Wake.
type Work struct {
	// Pod is the pod Apply is for: the record's pod, or for an orphan a
	// stand-in with its identity (the grace periods then come from the
	// containers' own labels).
	Pod *syncpodv1.Pod
	// Apply is a non-empty change set for the executor; nil: none.
	Apply *syncpodv1.PodActions
	// Remove lists what to remove from the runtime.
	Remove Removal
	// Drop: once Remove succeeded, drop the pod from the store.
	Drop bool
	// RefreshVolumes asks the executor to bring the pod's configMap,
	// secret, projected and downwardAPI volumes up to date in place
	// (nothing restarts); set on every sync of a desired pod that is not
	// terminal and has a ready sandbox.
	RefreshVolumes bool
	// RemoveVolumes: once Remove succeeded, remove the pod's volume
	// directory (a deleted pod, an orphan).
	RemoveVolumes bool
	// Status is the pod's status to store; nil: leave it.
	Status *syncpodv1.PodStatus
	// Events are the sync's events, to fold into the pod's list.
	Events []*syncpodv1.Event
	// LastActions is the change set applied, to record; nil: leave it.
	LastActions *syncpodv1.PodActions
	// Err fails the sync after the commit.
	Err error
	// Wake is when the pod wants to be synced again; zero: no wish.
	Wake time.Time
}

// Commits reports whether the work has anything to store.
func (w Work) Commits() bool {
	return w.Status != nil || len(w.Events) > 0 || w.LastActions != nil
}

// Step is one step of a pod sync: see the package documentation.
func Step(in Input) Work {
	switch {
	case in.Record == nil:
		return orphan(in)
	case in.Record.GetPod().GetDeletionTime() != nil:
		return terminate(in)
	case in.Applied != nil:
		return applied(in)
	}
	pod := runningPod(in)
	// The status is computed once per sync: it says whether the pod has
	// finished, and is the status to store when there is nothing to apply
	// (after an apply, applied computes it from the executor's answer).
	st := status.Compute(statusInput(in, nil))
	var actions *syncpodv1.PodActions
	if isTerminal(st.GetPhase()) {
		if anythingRunning(in.Observed) {
			msg := MessageFinished
			var override *int64
			switch st.GetReason() {
			case status.ReasonDeadlineExceeded:
				msg = status.MessageDeadlineExceeded
			case status.ReasonEvicted:
				msg = "The pod was evicted: " + strings.TrimSpace(statusMessage(in))
				// The eviction manager's kill ignores the pod's grace.
				g := EvictionGracePeriodSeconds
				if p := in.PressureGracePeriod; p != nil {
					g = *p
				}
				override = &g
			case nodeshutdown.Reason:
				msg = nodeshutdown.Message
				if g := in.NodeShutdown; g != nil {
					grace := *g
					override = &grace
				}
			}
			actions = &syncpodv1.PodActions{KillPod: true,
				KillPodReason: syncpodv1.KillPodReason_KILL_POD_REASON_NOTHING_TO_RUN, Message: msg,
				KillGracePeriodOverrideSeconds: override, SidecarsToKeepRunning: sidecarsToKeep(in, pod)}
		}
	} else {
		actions = plan.Compute(pod, in.Observed, in.Probes)
	}
	if actions == nil || plan.IsEmpty(actions) {
		return withVolumeRefresh(in, withResizeEvents(in, withDeadline(in, Work{Status: st})))
	}
	return Work{Pod: pod, Apply: actions}
}

// withDeadline adds what a pod's active deadline asks of a sync whose
// status w carries: the kubelet's DeadlineExceeded event the first time the
// status says so, and a wake-up at the deadline while the pod still runs.
func withDeadline(in Input, w Work) Work {
	pod := runningPod(in)
	st := w.Status
	if st.GetReason() == status.ReasonDeadlineExceeded && in.Record.GetStatus().GetReason() != status.ReasonDeadlineExceeded {
		w.Events = append(w.Events, events.New(pod, syncpodv1.EventType_EVENT_TYPE_NORMAL,
			status.ReasonDeadlineExceeded, "", status.MessageDeadlineExceeded, in.Now))
	}
	if st.GetReason() == status.ReasonEvicted && in.Record.GetStatus().GetReason() != status.ReasonEvicted {
		// The kubelet's eviction manager: a Warning event with the message.
		w.Events = append(w.Events, events.New(pod, syncpodv1.EventType_EVENT_TYPE_WARNING,
			status.ReasonEvicted, "", st.GetMessage(), in.Now))
	}
	if at, ok := status.Deadline(pod, st); ok && !isTerminal(st.GetPhase()) && (w.Wake.IsZero() || at.Before(w.Wake)) {
		w.Wake = at
	}
	return w
}

// applied turns the executor's answer for a desired pod into the sync's
// events, last actions, status and wake-up.
func applied(in Input) Work {
	pod := runningPod(in)
	resp := in.Applied.Result
	w := Work{
		Events:      events.FromApplyResult(pod, in.Applied.Actions, resp, in.Now),
		LastActions: in.Applied.Actions,
		Status:      status.Compute(statusInput(in, resp.GetSteps())),
	}
	if t := resp.GetRetryAt(); t != nil {
		w.Wake = t.AsTime()
	}
	if resizedInPlace(resp) {
		// as the kubelet asks for the pod to be inspected again
		// after a resize, the next sync (whose status no longer says the
		// resize is in progress) comes at once: an update changes no
		// container's state, so no lifecycle event would bring it.
		w.Wake = in.Now
	}
	if removedByReset(resp) {
		// as the kubelet requeues the pod after a reset that
		// removed something, the next sync (which starts the pod again)
		// comes at once, not at the next event or resync.
		w.Wake = in.Now
	}
	return withVolumeRefresh(in, withResizeEvents(in, withDeadline(in, w)))
}

// resizedInPlace reports whether the executor updated a container's
// resources.
func resizedInPlace(resp *executorv1.ApplyActionsResponse) bool {
	for _, st := range resp.GetSteps() {
		if st.GetStep() == executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES && st.GetOutcome() == executorv1.Outcome_OUTCOME_SUCCEEDED {
			return true
		}
	}
	return false
}

// removedByReset reports whether the executor removed an instance for a
// reset of every container of the pod.
func removedByReset(resp *executorv1.ApplyActionsResponse) bool {
	for _, st := range resp.GetSteps() {
		if st.GetStep() == executorv1.Step_STEP_REMOVE_CONTAINER && st.GetOutcome() == executorv1.Outcome_OUTCOME_SUCCEEDED {
			return true
		}
	}
	return false
}

// runningPod is the record's pod as it runs: its spec with the resources
// the node admitted; a resize that waits is not in it.
func runningPod(in Input) *syncpodv1.Pod {
	return allocation.Pod(in.Record.GetPod(), in.Record.GetAllocation())
}

func statusInput(in Input, steps []*executorv1.StepResult) status.Input {
	return status.Input{Pod: runningPod(in), Allocation: in.Record.GetAllocation(), Observed: in.Observed, Previous: in.Record.GetStatus(),
		Steps: steps, Probes: in.Probes, Now: in.Now, Evicted: in.Evicted, NodeShutdown: in.NodeShutdown != nil,
		UnderPressure: in.Evicted != "" && in.PressureGracePeriod != nil}
}

// statusMessage is the pod-level message of the status the step computes.
func statusMessage(in Input) string {
	return status.Compute(statusInput(in, nil)).GetMessage()
}

// terminate drives a deleted pod to removal: kill what runs, then remove
// every container and sandbox, then drop the pod.
func terminate(in Input) Work {
	pod := in.Record.GetPod()
	if in.Applied != nil {
		resp := in.Applied.Result
		w := Work{Events: events.FromApplyResult(pod, in.Applied.Actions, resp, in.Now), LastActions: in.Applied.Actions}
		if failed := failedSteps(stoppingSteps(resp)); failed != "" {
			w.Err = fmt.Errorf("killing the deleted pod: %s", failed)
			return w
		}
		w.Wake = in.Now // the next status must show everything stopped
		return w
	}
	if anythingRunning(in.Observed) {
		return Work{Pod: pod, Apply: &syncpodv1.PodActions{KillPod: true, Message: MessageDeleted,
			SidecarsToKeepRunning: sidecarsToKeep(in, pod)}}
	}
	r := everything(in.Observed)
	r.Forget = forget(pod.GetUid(), pod.GetNamespace(), pod.GetName())
	return Work{Remove: r, RemoveVolumes: true, Drop: true}
}

// sidecarsToKeep is what the kill of a terminating pod keeps running
// until its turn to stop: none when the caller asked for the
// kubelet's way.
func sidecarsToKeep(in Input, pod *syncpodv1.Pod) []*syncpodv1.ContainerStart {
	if in.SidecarsStayDown {
		return nil
	}
	return plan.SidecarsToKeepRunning(pod, in.Observed)
}

// orphan kills a runtime pod nobody wants, and once it is stopped removes
// it. Nothing is committed: there is no record.
func orphan(in Input) Work {
	o := in.Observed
	switch {
	case in.Applied != nil:
		return Work{}
	case anythingRunning(o):
		pod := &syncpodv1.Pod{Uid: o.GetUid(), Name: o.GetName(), Namespace: o.GetNamespace(), Spec: &syncpodv1.PodSpec{}}
		return Work{Pod: pod, Apply: &syncpodv1.PodActions{KillPod: true, Message: MessageOrphan}}
	}
	r := everything(o)
	if !r.Empty() {
		// With its last runtime objects go its log directory and back-offs.
		r.Forget = forget(o.GetUid(), o.GetNamespace(), o.GetName())
	}
	return Work{Remove: r, RemoveVolumes: true}
}

// Garbage lists what a desired pod no longer needs: exited containers
// beyond the newest exited instance of their name, and stopped sandboxes
// that are not the newest sandbox (their containers go with them). The
// newest dead instance is kept, as the kubelet's container GC keeps one
// per container: its exit code and finish time are the container's last
// termination state and drive restart decisions and back-off. Exited
// instances of a container no longer in pod's spec (pods are mutable)
// have no such use and all go; a nil pod removes none of them.
func Garbage(o *syncpodv1.ObservedPod, pod *syncpodv1.Pod) Removal {
	var r Removal
	sbs, cs := plan.NewestFirst(o)
	removedSandbox := map[string]bool{}
	for i, sb := range sbs {
		if i > 0 && sb.GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY {
			r.Sandboxes = append(r.Sandboxes, sb.GetId())
			removedSandbox[sb.GetId()] = true
		}
	}
	inSpec := map[string]bool{}
	// An exited ephemeral container is kept as any other (its newest
	// instance): removing it would start it again.
	for _, c := range slices.Concat(pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers(), pod.GetSpec().GetEphemeralContainers()) {
		inSpec[c.GetName()] = true
	}
	keptDead := map[string]bool{}
	for _, c := range cs {
		if removedSandbox[c.GetSandboxId()] || c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			continue // goes with its sandbox, or is not dead
		}
		if keptDead[c.GetName()] || pod != nil && !inSpec[c.GetName()] {
			r.Containers = append(r.Containers, c.GetId())
		}
		keptDead[c.GetName()] = true
	}
	return r
}

// stoppingSteps is resp without the starts of the sidecars its kill kept
// running: a sidecar that could not be started again during the
// kill does not fail the kill.
func stoppingSteps(resp *executorv1.ApplyActionsResponse) *executorv1.ApplyActionsResponse {
	out := &executorv1.ApplyActionsResponse{}
	for _, st := range resp.GetSteps() {
		if st.GetStep() != executorv1.Step_STEP_START_INIT_CONTAINER {
			out.Steps = append(out.Steps, st)
		}
	}
	return out
}

// failedSteps describes the steps of resp that failed, "" when none did.
func failedSteps(resp *executorv1.ApplyActionsResponse) string {
	var out []string
	for _, st := range resp.GetSteps() {
		if st.GetOutcome() == executorv1.Outcome_OUTCOME_FAILED {
			out = append(out, fmt.Sprintf("%s %s: %s %s", st.GetStep(), st.GetTarget(), st.GetReason(), st.GetMessage()))
		}
	}
	return strings.Join(out, "; ")
}

func isTerminal(p syncpodv1.PodPhase) bool {
	return p == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED || p == syncpodv1.PodPhase_POD_PHASE_FAILED
}

func anythingRunning(o *syncpodv1.ObservedPod) bool {
	for _, c := range o.GetContainers() {
		if c.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
			return true
		}
	}
	for _, sb := range o.GetSandboxes() {
		if sb.GetState() == syncpodv1.SandboxState_SANDBOX_STATE_READY {
			return true
		}
	}
	return false
}

// everything lists every container and sandbox of o.
func everything(o *syncpodv1.ObservedPod) Removal {
	var r Removal
	for _, c := range o.GetContainers() {
		r.Containers = append(r.Containers, c.GetId())
	}
	for _, sb := range o.GetSandboxes() {
		r.Sandboxes = append(r.Sandboxes, sb.GetId())
	}
	return r
}
