package ctl

import (
	"fmt"
	"strings"
	"time"

	"github.com/syncpod/syncpod/proto/k8snames"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// podStatusColumn is kubectl's STATUS column: the most telling reason
// among the pod's deletion, init containers, containers and phase.
func podStatusColumn(r *plannerv1.PodRecord) string {
	pod, st := r.GetPod(), r.GetStatus()
	reason := k8snames.PodPhase(st.GetPhase())
	if st.GetReason() != "" {
		reason = st.GetReason()
	}

	initializing := false
	inits := st.GetInitContainerStatuses()
	sidecar := map[string]bool{}
	for _, c := range pod.GetSpec().GetInitContainers() {
		sidecar[c.GetName()] = c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	}
	for i, cs := range inits {
		term := cs.GetState().GetTerminated()
		wait := cs.GetState().GetWaiting()
		switch {
		case term != nil && term.GetExitCode() == 0:
			continue
		case sidecar[cs.GetName()] && cs.GetStarted():
			continue
		case term != nil:
			if term.GetReason() != "" {
				reason = "Init:" + term.GetReason()
			} else if term.GetSignal() != 0 {
				reason = fmt.Sprintf("Init:Signal:%d", term.GetSignal())
			} else {
				reason = fmt.Sprintf("Init:ExitCode:%d", term.GetExitCode())
			}
			initializing = true
		case wait != nil && wait.GetReason() != "" && wait.GetReason() != "PodInitializing":
			reason = "Init:" + wait.GetReason()
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.GetSpec().GetInitContainers()))
			initializing = true
		}
		break
	}

	if !initializing {
		hasRunning := false
		for i := len(st.GetContainerStatuses()) - 1; i >= 0; i-- {
			cs := st.GetContainerStatuses()[i]
			switch s := cs.GetState(); {
			case s.GetWaiting() != nil && s.GetWaiting().GetReason() != "":
				reason = s.GetWaiting().GetReason()
			case s.GetTerminated() != nil && s.GetTerminated().GetReason() != "":
				reason = s.GetTerminated().GetReason()
			case s.GetTerminated() != nil && s.GetTerminated().GetSignal() != 0:
				reason = fmt.Sprintf("Signal:%d", s.GetTerminated().GetSignal())
			case s.GetTerminated() != nil:
				reason = fmt.Sprintf("ExitCode:%d", s.GetTerminated().GetExitCode())
			case cs.GetReady() && s.GetRunning() != nil:
				hasRunning = true
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "Running"
		}
	}
	if pod.GetDeletionTime() != nil {
		reason = "Terminating"
	}
	if reason == "" {
		reason = "Pending"
	}
	return reason
}

// readyColumn is "ready/total" over regular containers and sidecars.
func readyColumn(r *plannerv1.PodRecord) string {
	total, ready := len(r.GetPod().GetSpec().GetContainers()), 0
	for _, cs := range r.GetStatus().GetContainerStatuses() {
		if cs.GetReady() {
			ready++
		}
	}
	sidecars := map[string]bool{}
	for _, c := range r.GetPod().GetSpec().GetInitContainers() {
		if c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS {
			sidecars[c.GetName()] = true
			total++
		}
	}
	for _, cs := range r.GetStatus().GetInitContainerStatuses() {
		if sidecars[cs.GetName()] && cs.GetReady() {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, total)
}

// restartsColumn sums restarts and says how long ago the last one was.
func restartsColumn(r *plannerv1.PodRecord, now time.Time) string {
	var n int32
	var last time.Time
	all := append(append([]*syncpodv1.ContainerStatus(nil), r.GetStatus().GetInitContainerStatuses()...), r.GetStatus().GetContainerStatuses()...)
	for _, cs := range all {
		n += cs.GetRestartCount()
		if t := cs.GetLastTerminationState().GetTerminated(); t != nil && t.GetFinishedAt() != nil && t.GetFinishedAt().AsTime().After(last) {
			last = t.GetFinishedAt().AsTime()
		}
	}
	if n > 0 && !last.IsZero() {
		return fmt.Sprintf("%d (%s ago)", n, humanDuration(now.Sub(last)))
	}
	return fmt.Sprint(n)
}

// humanDuration is kubectl's short age: 45s, 3m10s, 5h, 2d.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch s := int(d.Seconds()); {
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case s < 600:
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case d < 3*time.Hour:
		return fmt.Sprintf("%dm", s/60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", s/3600)
	default:
		return fmt.Sprintf("%dd", s/86400)
	}
}

func ageColumn(p *syncpodv1.Pod, now time.Time) string {
	if p.GetCreationTime() == nil {
		return "<unknown>"
	}
	return humanDuration(now.Sub(p.GetCreationTime().AsTime()))
}

// table writes rows as aligned columns separated by three spaces.
func table(rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + strings.Repeat(" ", widths[i]-len(c)+3))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
