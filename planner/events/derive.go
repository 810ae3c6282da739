package events

import (
	"fmt"
	"slices"
	"strings"
	"time"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Event reasons, as the kubelet names them.
const (
	ReasonPulled                 = "Pulled"
	ReasonCreated                = "Created"
	ReasonStarted                = "Started"
	ReasonKilling                = "Killing"
	ReasonBackOff                = "BackOff"
	ReasonFailed                 = "Failed"
	ReasonSandboxChanged         = "SandboxChanged"
	ReasonFailedCreatePodSandBox = "FailedCreatePodSandBox"
	ReasonFailedKillPod          = "FailedKillPod"
	ReasonErrImageNeverPull      = "ErrImageNeverPull"
	ReasonFailedPostStartHook    = "FailedPostStartHook"
	ReasonFailedPreStopHook      = "FailedPreStopHook"
	ReasonFailedMount            = "FailedMount"
)

// Step failure reasons reported by the executor (StepResult.reason).
const (
	stepCrashLoopBackOff  = "CrashLoopBackOff"
	stepImagePullBackOff  = "ImagePullBackOff"
	stepErrImagePull      = "ErrImagePull"
	stepErrImageNeverPull = "ErrImageNeverPull"
	stepInvalidImageName  = "InvalidImageName"
	stepPostStartHookErr  = "PostStartHookError"
)

var (
	normal  = syncpodv1.EventType_EVENT_TYPE_NORMAL
	warning = syncpodv1.EventType_EVENT_TYPE_WARNING
)

// FromApplyResult derives the kubelet's events from one executor response
// to actions for pod, all stamped at. Steps are read in order:
//
//   - kill container, succeeded: Normal Killing with the kill's message
//     ("Stopping container <c>" when it has none; "killing" for an
//     instance stopped by a reset of every container, R-7.6);
//   - remove container (a reset's): no event, as the kubelet;
//   - kill pod or stop sandbox, failed: Warning FailedKillPod;
//   - create sandbox, succeeded while replacing one (actions.sandbox_id
//     set): Normal SandboxChanged; failed: Warning FailedCreatePodSandBox;
//   - pull image, succeeded: Normal Pulled; ErrImagePull / InvalidImageName:
//     Warning Failed; ImagePullBackOff: Normal BackOff; ErrImageNeverPull:
//     Warning ErrImageNeverPull; an image volume's pull gives the
//     same events, of the pod and naming the volume's image;
//   - postStart hook, failed: Warning FailedPostStartHook "PostStartHook
//     failed"; preStop hook, failed: Warning FailedPreStopHook "PreStopHook
//     failed" (the kubelet keeps the hook's output out of events; it is in
//     the step message and the container's waiting message);
//   - start (init) container, succeeded, or failed only in its postStart
//     hook (PostStartHookError): Normal Created and Normal Started;
//     CrashLoopBackOff: Warning BackOff "Back-off restarting failed
//     container" (R-11.3); failed for an image volume's failed pull
//     Warning Failed "Error: <reason>"; any other failure:
//     Warning Failed "Error: <reason>".
//
// Steps skipped because an earlier step failed give no event.
// failedMountPrefix starts the executor's message for a volume that could
// not be set up (the kubelet's MountVolume.SetUp text): such a failed start
// is a FailedMount event as well.
const failedMountPrefix = "MountVolume.SetUp failed"

// killingForReset is the message of the Killing event of an instance
// stopped because every container of its pod restarts.
const killingForReset = "killing"

func FromApplyResult(pod *syncpodv1.Pod, actions *syncpodv1.PodActions, resp *executorv1.ApplyActionsResponse, at time.Time) []*syncpodv1.Event {
	var out []*syncpodv1.Event
	add := func(typ syncpodv1.EventType, reason, container, format string, args ...any) {
		out = append(out, New(pod, typ, reason, container, fmt.Sprintf(format, args...), at))
	}
	podName := pod.GetName()
	if ns := pod.GetNamespace(); ns != "" {
		podName = ns + "/" + podName
	}
	killMessages := map[string]string{}
	for _, k := range actions.GetContainersToKill() {
		killMessages[k.GetContainerId()] = k.GetMessage()
	}
	for _, r := range actions.GetContainersToReset() {
		// the kubelet stops an instance of a reset with the
		// message "killing", which its Killing event carries.
		killMessages[r.GetContainerId()] = killingForReset
	}
	images := map[string]string{}
	for _, c := range pod.GetSpec().GetInitContainers() {
		images[c.GetName()] = c.GetImage()
	}
	for _, c := range slices.Concat(pod.GetSpec().GetContainers(), pod.GetSpec().GetEphemeralContainers()) {
		images[c.GetName()] = c.GetImage()
	}

	for _, st := range resp.GetSteps() {
		ok := st.GetOutcome() == executorv1.Outcome_OUTCOME_SUCCEEDED
		failed := st.GetOutcome() == executorv1.Outcome_OUTCOME_FAILED
		skipped := st.GetOutcome() == executorv1.Outcome_OUTCOME_SKIPPED
		name, reason, msg := st.GetTarget(), st.GetReason(), st.GetMessage()
		switch st.GetStep() {
		case executorv1.Step_STEP_KILL_CONTAINER:
			switch {
			case ok:
				m := killMessages[st.GetContainerId()]
				switch {
				case m == "" && reason != "":
					// A stop the executor decided on, with its own
					// reason: a sidecar kept running through a pod kill
					// whose probe failed.
					m = msg
				case m == "":
					m = "Stopping container " + name
				}
				add(normal, ReasonKilling, name, "%s", m)
			case failed:
				add(warning, ReasonFailed, name, "Error: %s", orDefault(msg, reason))
			}
		case executorv1.Step_STEP_KILL_POD, executorv1.Step_STEP_STOP_SANDBOX:
			if failed {
				add(warning, ReasonFailedKillPod, "", "error killing pod: %s", orDefault(msg, reason))
			}
		case executorv1.Step_STEP_CREATE_SANDBOX:
			switch {
			case ok && actions.GetSandboxId() != "":
				add(normal, ReasonSandboxChanged, "", "Pod sandbox changed, it will be killed and re-created.")
			case failed:
				// The executor's step message is the kubelet's sync result,
				// already "Failed to create pod sandbox: <err>"; the event
				// says it once, as the kubelet's does.
				add(warning, ReasonFailedCreatePodSandBox, "", "Failed to create pod sandbox: %s",
					strings.TrimPrefix(orDefault(msg, reason), "Failed to create pod sandbox: "))
			}
		case executorv1.Step_STEP_PULL_IMAGE:
			img := images[name]
			if ref := st.GetImageVolumeReference(); ref != "" {
				img = ref // an image volume's pull, an event of the pod
			}
			switch {
			case ok:
				add(normal, ReasonPulled, name, "%s", orDefault(msg, fmt.Sprintf("Container image %q already present on machine", img)))
			case reason == stepImagePullBackOff:
				add(normal, ReasonBackOff, name, "Back-off pulling image %q", img)
			case reason == stepErrImageNeverPull:
				add(warning, ReasonErrImageNeverPull, name, "%s", orDefault(msg, fmt.Sprintf("Container image %q is not present with pull policy of Never", img)))
			case failed || skipped && reason != "":
				add(warning, ReasonFailed, name, "Failed to pull image %q: %s", img, orDefault(msg, reason))
				add(warning, ReasonFailed, name, "Error: %s", orDefault(reason, stepErrImagePull))
			}
		case executorv1.Step_STEP_POST_START_HOOK:
			if failed {
				add(warning, ReasonFailedPostStartHook, name, "PostStartHook failed")
			}
		case executorv1.Step_STEP_PRE_STOP_HOOK:
			if failed {
				add(warning, ReasonFailedPreStopHook, name, "PreStopHook failed")
			}
		case executorv1.Step_STEP_START_INIT_CONTAINER, executorv1.Step_STEP_START_CONTAINER, executorv1.Step_STEP_START_EPHEMERAL_CONTAINER:
			switch {
			case ok, reason == stepPostStartHookErr:
				add(normal, ReasonCreated, name, "Created container: %s", name)
				add(normal, ReasonStarted, name, "Started container %s", name)
			case reason == stepCrashLoopBackOff:
				add(warning, ReasonBackOff, name, "Back-off restarting failed container %s in pod %s", name, podName)
			case failed && st.GetImageVolumeReference() != "":
				// the container mounts an image volume whose
				// pull failed; the pull's own events are the pod's.
				add(warning, ReasonFailed, name, "Error: %s", reason)
			case reason == stepImagePullBackOff:
				add(normal, ReasonBackOff, name, "Back-off pulling image %q", images[name])
			case reason == stepErrImagePull || reason == stepInvalidImageName:
				add(warning, ReasonFailed, name, "Error: %s", reason)
			case failed && strings.HasPrefix(msg, failedMountPrefix):
				add(warning, ReasonFailedMount, name, "%s", msg)
				add(warning, ReasonFailed, name, "Error: %s", reason)
			case failed:
				add(warning, ReasonFailed, name, "Error: %s", orDefault(msg, reason))
			}
		}
	}
	return out
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
