package status

import (
	"fmt"
	"strings"
	"time"

	"github.com/syncpod/syncpod/planner/plan"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Waiting and terminated reasons, as the kubelet names them.
const (
	ReasonContainerCreating    = "ContainerCreating"
	ReasonPodInitializing      = "PodInitializing"
	ReasonCrashLoopBackOff     = "CrashLoopBackOff"
	ReasonImagePullBackOff     = "ImagePullBackOff"
	ReasonErrImagePull         = "ErrImagePull"
	ReasonErrImageNeverPull    = "ErrImageNeverPull"
	ReasonInvalidImageName     = "InvalidImageName"
	ReasonCreateContainerError = "CreateContainerError"
	ReasonRunContainerError    = "RunContainerError"
	// ReasonCreateContainerConfigError: the container's config cannot be
	// made, e.g. a ConfigMap, Secret, key or volume it needs is missing,
	// or runAsNonRoot refuses its user.
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonPostStartHookError         = "PostStartHookError"
	ReasonContainerStatusUnknown     = "ContainerStatusUnknown"
	ReasonCompleted                  = "Completed"
	ReasonError                      = "Error"
)

// Condition types and reasons.
const (
	ConditionReadyToStart    = "PodReadyToStartContainers"
	ConditionInitialized     = "Initialized"
	ConditionContainersReady = "ContainersReady"
	ConditionReady           = "Ready"

	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonPodSandboxNotReady       = "PodSandboxNotReady"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonPodCompleted             = "PodCompleted"
)

// isStepWaitingReason reports whether a step failure reason becomes a
// container's waiting reason.
func isStepWaitingReason(r string) bool {
	switch r {
	case ReasonCrashLoopBackOff, ReasonImagePullBackOff, ReasonErrImagePull, ReasonErrImageNeverPull,
		ReasonInvalidImageName, ReasonCreateContainerError, ReasonRunContainerError,
		ReasonCreateContainerConfigError, ReasonPostStartHookError:
		return true
	}
	return false
}

// ts copies a timestamp so the output never aliases the input.
func ts(t *timestamppb.Timestamp) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return proto.Clone(t).(*timestamppb.Timestamp)
}

// Input is everything Compute looks at. Nothing in it is modified.
type Input struct {
	// Pod is the desired pod. Required.
	Pod *syncpodv1.Pod
	// Observed is the runtime state; nil means nothing exists yet.
	Observed *syncpodv1.ObservedPod
	// Previous is the last status computed for the pod, if any: transition
	// times and start time carry over from it.
	Previous *syncpodv1.PodStatus
	// Steps are the step results of the last executor call, if any.
	Steps []*executorv1.StepResult
	// Probes are the current probe results, at most one per container.
	Probes []*syncpodv1.ContainerProbeResults
	// Now is the time the status is computed at.
	Now time.Time
	// Evicted, when set, is why the pod is evicted (an emptyDir over its
	// sizeLimit): phase Failed, reason Evicted, this message.
	Evicted string
	// NodeShutdown: the node's graceful shutdown ends the pod.
	NodeShutdown bool
	// UnderPressure: the eviction is for node pressure, which
	// also sets the DisruptionTarget condition.
	UnderPressure bool
	// Allocation is what the node admitted of the pod's resources; Pod
	// already runs with them. A pending resize in it is the
	// PodResizePending condition.
	Allocation *plannerv1.PodAllocation
}

// Compute returns the pod's status.
func Compute(in Input) *syncpodv1.PodStatus {
	st, c, init, anyStarted := compute(in)
	st.Conditions = c.conditions(st, init, anyStarted)
	return st
}

// compute builds the status without its conditions.
func compute(in Input) (*syncpodv1.PodStatus, *computer, initState, bool) {
	pod := in.Pod
	spec := pod.GetSpec()
	byName := observedByName(in.Observed)
	defaultWaiting := ReasonContainerCreating
	if len(spec.GetInitContainers()) > 0 {
		defaultWaiting = ReasonPodInitializing
	}
	c := computer{in: in, byName: byName, defaultWaiting: defaultWaiting}
	c.restarting = c.restartingAll()

	st := &syncpodv1.PodStatus{
		ObservedGeneration: pod.GetGeneration(),
		UpdatedAt:          timestamppb.New(in.Now),
		PodIp:              podIP(in.Observed),
	}
	if prev := in.Previous.GetStartTime(); prev != nil {
		st.StartTime = ts(prev)
	} else {
		st.StartTime = timestamppb.New(in.Now)
	}
	for _, ctr := range spec.GetInitContainers() {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.containerStatus(ctr, true))
	}
	for _, ctr := range spec.GetContainers() {
		st.ContainerStatuses = append(st.ContainerStatuses, c.containerStatus(ctr, false))
	}
	for _, ctr := range spec.GetEphemeralContainers() {
		// built as a regular container's status; no probe ever runs
		// on one, so it is never ready or started, and the phase and the
		// conditions never look at it.
		cs := c.containerStatus(ctr, false)
		cs.Ready, cs.Started = false, false
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, cs)
	}

	init := c.initProgress(st.InitContainerStatuses)
	anyStarted := c.anyRegularStarted()
	st.Phase = c.phase(init, anyStarted, st.ContainerStatuses)
	if prev := in.Previous; prev != nil && isTerminal(prev.GetPhase()) &&
		prev.GetObservedGeneration() == pod.GetGeneration() && !isTerminal(st.Phase) {
		st.Phase = prev.GetPhase()
	}
	applyDeadline(pod, in.Previous, st, in.Now)
	applyEviction(pod, in.Previous, st, in.Evicted)
	applyNodeShutdown(pod, in.Previous, st, in.NodeShutdown)
	return st, &c, init, anyStarted
}

func isTerminal(p syncpodv1.PodPhase) bool {
	return p == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED || p == syncpodv1.PodPhase_POD_PHASE_FAILED
}

type computer struct {
	in             Input
	byName         map[string][]*syncpodv1.ObservedContainer
	defaultWaiting string
	// restarting: every container of the pod is being restarted in
	// place.
	restarting bool
}

// observedByName groups container instances by name, newest first.
func observedByName(o *syncpodv1.ObservedPod) map[string][]*syncpodv1.ObservedContainer {
	_, list := plan.NewestFirst(o)
	out := map[string][]*syncpodv1.ObservedContainer{}
	for _, c := range list {
		out[c.GetName()] = append(out[c.GetName()], c)
	}
	return out
}

// podIP is the newest sandbox's IP when it is a ready pod-network sandbox.
func podIP(o *syncpodv1.ObservedPod) string {
	sbs, _ := plan.NewestFirst(o)
	if len(sbs) == 0 {
		return ""
	}
	s := sbs[0]
	if s.GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY || s.GetHostNetwork() {
		return ""
	}
	return s.GetIp()
}

func waiting(reason, message string) *syncpodv1.ContainerStateDetail {
	return &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Waiting{
		Waiting: &syncpodv1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func terminated(c *syncpodv1.ObservedContainer) *syncpodv1.ContainerStateDetail {
	reason := c.GetReason()
	if reason == "" {
		reason = ReasonCompleted
		if c.GetExitCode() != 0 {
			reason = ReasonError
		}
	}
	return &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Terminated{
		Terminated: &syncpodv1.ContainerStateTerminated{
			ExitCode:    c.GetExitCode(),
			Reason:      reason,
			Message:     c.GetMessage(),
			StartedAt:   ts(c.GetStartedAt()),
			FinishedAt:  ts(c.GetFinishedAt()),
			ContainerId: c.GetId(),
		}}}
}

func stateOf(c *syncpodv1.ObservedContainer) *syncpodv1.ContainerStateDetail {
	switch c.GetState() {
	case syncpodv1.ContainerState_CONTAINER_STATE_RUNNING:
		return &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Running{
			Running: &syncpodv1.ContainerStateRunning{StartedAt: ts(c.GetStartedAt())}}}
	case syncpodv1.ContainerState_CONTAINER_STATE_EXITED:
		return terminated(c)
	case syncpodv1.ContainerState_CONTAINER_STATE_CREATED:
		return waiting(ReasonContainerCreating, "")
	default:
		return waiting(ReasonContainerStatusUnknown, "The container state could not be read from the runtime")
	}
}

// stepFor returns the last failed or skipped start of the container that
// carries a waiting reason, or nil.
func (c *computer) stepFor(name string) *executorv1.StepResult {
	var found *executorv1.StepResult
	for _, s := range c.in.Steps {
		if s.GetTarget() != name || !isStepWaitingReason(s.GetReason()) {
			continue
		}
		switch s.GetStep() {
		case executorv1.Step_STEP_START_CONTAINER, executorv1.Step_STEP_START_INIT_CONTAINER, executorv1.Step_STEP_START_EPHEMERAL_CONTAINER,
			executorv1.Step_STEP_PULL_IMAGE:
		default:
			continue
		}
		if o := s.GetOutcome(); o == executorv1.Outcome_OUTCOME_FAILED || o == executorv1.Outcome_OUTCOME_SKIPPED {
			found = s
		}
	}
	return found
}

func (c *computer) probesFor(name, id string) *syncpodv1.ContainerProbeResults {
	for _, p := range c.in.Probes {
		if p.GetName() == name && (p.GetContainerId() == "" || p.GetContainerId() == id) {
			return p
		}
	}
	return nil
}

func isSidecar(ctr *syncpodv1.Container, isInit bool) bool {
	return isInit && ctr.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
}

func (c *computer) containerStatus(ctr *syncpodv1.Container, isInit bool) *syncpodv1.ContainerStatus {
	name := ctr.GetName()
	cs := &syncpodv1.ContainerStatus{Name: name, Image: ctr.GetImage()}
	insts := c.byName[name]
	var cur *syncpodv1.ObservedContainer
	if len(insts) == 0 {
		cs.State = waiting(c.defaultWaiting, "")
	} else {
		cur = insts[0]
		cs.ContainerId = cur.GetId()
		cs.StopSignal = cur.GetStopSignal()
		cs.RestartCount = cur.GetRestartCount()
		cs.State = stateOf(cur)
		for _, prev := range insts[1:] {
			if prev.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
				cs.LastTerminationState = terminated(prev)
				break
			}
		}
	}
	if plan.CouldRestartAll(c.in.Pod.GetSpec()) && !isEphemeral(c.in.Pod, ctr) {
		c.carryOver(cs, cur, isInit)
	}
	running := cur.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
	if s := c.stepFor(name); s != nil && !running && !c.stale(s, cur) {
		if cs.State.GetTerminated() != nil {
			cs.LastTerminationState = cs.State
		}
		cs.State = waiting(s.GetReason(), c.waitingMessage(s, name))
	}

	probes := c.probesFor(name, cs.GetContainerId())
	if running {
		cs.Started = ctr.GetStartupProbe() == nil || probes.GetStartup() == syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
		cs.Ready = cs.Started && (ctr.GetReadinessProbe() == nil || probes.GetReadiness() == syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS)
	}
	if isInit && !isSidecar(ctr, true) {
		// A regular init container is ready once it completed.
		t := cs.GetState().GetTerminated()
		cs.Ready = t != nil && t.GetExitCode() == 0
	}
	if !isEphemeral(c.in.Pod, ctr) {
		resources(cs, ctr, cur)
	}
	return cs
}

// stale reports whether a back-off step no longer applies: the container
// was created again after the back-off ended.
func (c *computer) stale(s *executorv1.StepResult, cur *syncpodv1.ObservedContainer) bool {
	until := s.GetBackoffUntil()
	if until == nil || cur == nil || cur.GetCreatedAt() == nil {
		return false
	}
	return cur.GetCreatedAt().AsTime().After(until.AsTime())
}

// waitingMessage is the step's message, and for a back-off how long is left.
func (c *computer) waitingMessage(s *executorv1.StepResult, name string) string {
	msg := s.GetMessage()
	if s.GetReason() != ReasonCrashLoopBackOff {
		return msg
	}
	if msg == "" {
		msg = fmt.Sprintf("back-off restarting failed container=%s pod=%s", name, c.in.Pod.GetName())
	}
	if until := s.GetBackoffUntil(); until != nil {
		left := until.AsTime().Sub(c.in.Now)
		if left > 0 {
			return fmt.Sprintf("%s (%s remaining)", msg, left.Round(time.Second))
		}
		return msg + " (back-off expired, restart pending)"
	}
	return msg
}

// isEphemeral reports whether ctr is one of the pod's ephemeral containers.
func isEphemeral(pod *syncpodv1.Pod, ctr *syncpodv1.Container) bool {
	for _, e := range pod.GetSpec().GetEphemeralContainers() {
		if e == ctr {
			return true
		}
	}
	return false
}

// willRestart reports whether an exited container with this exit code is
// restarted. Nothing restarts once the pod is deleted.
func (c *computer) willRestart(ctr *syncpodv1.Container, isInit bool, exit int32) bool {
	if c.in.Pod.GetDeletionTime() != nil {
		return false
	}
	if isSidecar(ctr, isInit) {
		return true
	}
	if isInit && exit == 0 {
		return false // a completed init container is done
	}
	restart, _ := plan.RestartsAfterExit(c.in.Pod.GetSpec(), ctr, exit)
	return restart
}

// lastExit returns the exit code the container's state (or, while it
// waits, its last termination) reports.
func lastExit(cs *syncpodv1.ContainerStatus) (int32, bool) {
	if t := cs.GetState().GetTerminated(); t != nil {
		return t.GetExitCode(), true
	}
	if t := cs.GetLastTerminationState().GetTerminated(); t != nil && cs.GetState().GetWaiting() != nil {
		return t.GetExitCode(), true
	}
	return 0, false
}

// initState summarises the init containers.
type initState struct {
	pending    int      // not done yet (or failed but will be retried)
	failed     int      // failed and will not be retried
	incomplete []string // names of the init containers not done
}

func (c *computer) initProgress(statuses []*syncpodv1.ContainerStatus) initState {
	var s initState
	for i, ctr := range c.in.Pod.GetSpec().GetInitContainers() {
		cs := statuses[i]
		if isSidecar(ctr, true) {
			if cs.GetState().GetRunning() == nil || !cs.GetStarted() {
				s.pending++
				s.incomplete = append(s.incomplete, ctr.GetName())
			}
			continue
		}
		exit, exited := lastExit(cs)
		switch {
		case exited && exit == 0 && cs.GetState().GetTerminated() != nil:
			continue // done
		case removedByReset(cs):
			// removed by a reset, to run again: like a failed init
			// container that restarts, it holds the pod neither pending
			// nor failed.
		case exited && exit != 0 && !c.willRestart(ctr, true, exit):
			s.failed++
		default:
			s.pending++
		}
		s.incomplete = append(s.incomplete, ctr.GetName())
	}
	return s
}

// anyRegularStarted: some regular container has ever started (then the pod
// stays initialised even while a sidecar restarts).
func (c *computer) anyRegularStarted() bool {
	for _, ctr := range c.in.Pod.GetSpec().GetContainers() {
		for _, o := range c.byName[ctr.GetName()] {
			if o.GetStartedAt() != nil || o.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING ||
				o.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
				return true
			}
		}
	}
	return false
}

// phase follows the kubelet's getPhase.
func (c *computer) phase(init initState, anyStarted bool, statuses []*syncpodv1.ContainerStatus) syncpodv1.PodPhase {
	if init.failed > 0 {
		return syncpodv1.PodPhase_POD_PHASE_FAILED
	}
	var running, waitingN, stopped, succeeded, unknown, restarting int
	for i, ctr := range c.in.Pod.GetSpec().GetContainers() {
		cs := statuses[i]
		switch {
		case cs.GetState().GetRunning() != nil:
			running++
		case cs.GetState().GetWaiting().GetReason() == ReasonContainerStatusUnknown:
			unknown++
		default:
			exit, exited := lastExit(cs)
			if !exited {
				waitingN++
				continue
			}
			stopped++
			if exit == 0 {
				succeeded++
			}
			if cs.GetState().GetWaiting() != nil || c.willRestart(ctr, false, exit) {
				restarting++
			}
		}
	}
	switch {
	case init.pending > 0 && !anyStarted, waitingN > 0:
		return syncpodv1.PodPhase_POD_PHASE_PENDING
	case running > 0 && unknown == 0:
		return syncpodv1.PodPhase_POD_PHASE_RUNNING
	case running == 0 && stopped > 0 && unknown == 0:
		switch {
		case restarting > 0:
			return syncpodv1.PodPhase_POD_PHASE_RUNNING
		case stopped == succeeded:
			return syncpodv1.PodPhase_POD_PHASE_SUCCEEDED
		default:
			return syncpodv1.PodPhase_POD_PHASE_FAILED
		}
	}
	return syncpodv1.PodPhase_POD_PHASE_PENDING
}

func (c *computer) conditions(st *syncpodv1.PodStatus, init initState, anyStarted bool) []*syncpodv1.PodCondition {
	initialized := cond(ConditionInitialized, true, "", "")
	if (init.pending > 0 || init.failed > 0) && !anyStarted && !c.wasInitialized() {
		initialized = cond(ConditionInitialized, false, ReasonContainersNotInitialized,
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(init.incomplete, " ")))
	}
	var unready []string
	for i, ctr := range c.in.Pod.GetSpec().GetInitContainers() {
		if isSidecar(ctr, true) && !st.InitContainerStatuses[i].GetReady() {
			unready = append(unready, ctr.GetName())
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.GetReady() {
			unready = append(unready, cs.GetName())
		}
	}
	ready := cond(ConditionContainersReady, true, "", "")
	switch {
	case st.Phase == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED:
		ready = cond(ConditionContainersReady, false, ReasonPodCompleted, "")
	case len(unready) > 0:
		ready = cond(ConditionContainersReady, false, ReasonContainersNotReady,
			fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	}
	podReady := proto.Clone(ready).(*syncpodv1.PodCondition)
	podReady.Type = ConditionReady

	out := []*syncpodv1.PodCondition{c.readyToStart(), initialized, ready, podReady}
	if plan.CouldRestartAll(c.in.Pod.GetSpec()) {
		out = append(out, c.allRestartingCondition(st.Phase))
	}
	if dt := disruptionTarget(c.in.Previous, st, c.in.UnderPressure); dt != nil {
		out = append(out, dt)
	}
	out = append(out, c.resizeConditions()...)
	for _, cd := range out {
		cd.LastTransitionTime = timestamppb.New(c.in.Now)
		for _, prev := range c.in.Previous.GetConditions() {
			if prev.GetType() == cd.GetType() && prev.GetStatus() == cd.GetStatus() && prev.GetLastTransitionTime() != nil {
				cd.LastTransitionTime = ts(prev.GetLastTransitionTime())
			}
		}
	}
	return out
}

// sandboxNotReadyMessages are the kubelet's messages of a false
// PodReadyToStartContainers, by the reason R-2 gives for a new sandbox.
var sandboxNotReadyMessages = map[syncpodv1.SandboxReason]string{
	syncpodv1.SandboxReason_SANDBOX_REASON_NO_SANDBOX:      "no pod sandbox exists",
	syncpodv1.SandboxReason_SANDBOX_REASON_MULTIPLE_READY:  "multiple pod sandboxes are ready and need to be reconciled",
	syncpodv1.SandboxReason_SANDBOX_REASON_NOT_READY:       "pod sandbox is not ready",
	syncpodv1.SandboxReason_SANDBOX_REASON_NETWORK_CHANGED: "network namespace mode changed and sandbox needs to be recreated",
	syncpodv1.SandboxReason_SANDBOX_REASON_NO_IP:           "pod sandbox has no IP address",
	syncpodv1.SandboxReason_SANDBOX_REASON_CONFIG_CHANGED:  "pod sandbox settings changed and sandbox needs to be recreated",
}

// readyToStart is the PodReadyToStartContainers condition: true
// while the pod's newest sandbox, with its network, serves (R-2 asks for
// no new one); false with PodSandboxNotReady and the kubelet's message
// otherwise.
func (c *computer) readyToStart() *syncpodv1.PodCondition {
	why := plan.SandboxChange(c.in.Pod, c.in.Observed)
	if why == syncpodv1.SandboxReason_SANDBOX_REASON_UNSPECIFIED {
		return cond(ConditionReadyToStart, true, "", "")
	}
	return cond(ConditionReadyToStart, false, ReasonPodSandboxNotReady, sandboxNotReadyMessages[why])
}

// wasInitialized: once a pod is initialised it stays so, also while its
// init containers run again after every container restarted in place
// (R-7.5; the kubelet keeps the condition for every pod): the previous
// status said Initialized.
func (c *computer) wasInitialized() bool {
	for _, cd := range c.in.Previous.GetConditions() {
		if cd.GetType() == ConditionInitialized && cd.GetStatus() == syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE {
			return true
		}
	}
	return false
}

func cond(typ string, ok bool, reason, message string) *syncpodv1.PodCondition {
	s := syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE
	if ok {
		s = syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE
	}
	return &syncpodv1.PodCondition{Type: typ, Status: s, Reason: reason, Message: message}
}
