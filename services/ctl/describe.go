package ctl

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/syncpod/syncpod/proto/k8snames"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// describe renders a pod record as kubectl describe does.
func describe(r *plannerv1.PodRecord, now time.Time) string {
	var b strings.Builder
	p, st := r.GetPod(), r.GetStatus()
	line := func(indent int, key, val string) {
		fmt.Fprintf(&b, "%s%-*s%s\n", strings.Repeat(" ", indent), max(14-indent, len(key)+2), key+":", val)
	}
	line(0, "Name", p.GetName())
	line(0, "Namespace", namespaceOf(p))
	line(0, "UID", p.GetUid())
	line(0, "Labels", mapString(p.GetLabels()))
	line(0, "Annotations", mapString(p.GetAnnotations()))
	if st.GetStartTime() != nil {
		line(0, "Start Time", st.GetStartTime().AsTime().UTC().Format(time.RFC1123Z))
	}
	status := podStatusColumn(r)
	if p.GetDeletionTime() != nil {
		status = fmt.Sprintf("Terminating (lasts %s)", humanDuration(now.Sub(p.GetDeletionTime().AsTime())))
		if p.DeletionGracePeriodSeconds != nil {
			line(0, "Termination Grace Period", fmt.Sprintf("%ds", p.GetDeletionGracePeriodSeconds()))
		}
	}
	line(0, "Status", status)
	if st.GetReason() != "" {
		line(0, "Reason", st.GetReason())
	}
	if st.GetMessage() != "" {
		line(0, "Message", st.GetMessage())
	}
	ip := st.GetPodIp()
	if p.GetSpec().GetHostNetwork() {
		ip = "<host network>"
	}
	line(0, "IP", ip)
	line(0, "Restart Policy", k8snames.RestartPolicy(p.GetSpec().GetRestartPolicy()))

	statuses := map[string]*syncpodv1.ContainerStatus{}
	for _, cs := range slices.Concat(st.GetInitContainerStatuses(), st.GetContainerStatuses(), st.GetEphemeralContainerStatuses()) {
		statuses[cs.GetName()] = cs
	}
	section := func(title string, cs []*syncpodv1.Container) {
		if len(cs) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, c := range cs {
			fmt.Fprintf(&b, "  %s:\n", c.GetName())
			s := statuses[c.GetName()]
			line(4, "Container ID", s.GetContainerId())
			line(4, "Image", c.GetImage())
			if len(c.GetCommand()) > 0 {
				line(4, "Command", strings.Join(c.GetCommand(), " "))
			}
			if len(c.GetArgs()) > 0 {
				line(4, "Args", strings.Join(c.GetArgs(), " "))
			}
			if t := c.GetTargetContainerName(); t != "" {
				line(4, "Target Container Name", t)
			}
			if c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS && title == "Init Containers" {
				line(4, "Sidecar", "true (restartPolicy: Always)")
			}
			writeState(&b, "State", s.GetState())
			if s.GetLastTerminationState().GetState() != nil {
				writeState(&b, "Last State", s.GetLastTerminationState())
			}
			line(4, "Ready", titleBool(s.GetReady()))
			line(4, "Restart Count", fmt.Sprint(s.GetRestartCount()))
			for _, pr := range []struct {
				name string
				p    *syncpodv1.Probe
			}{{"Liveness", c.GetLivenessProbe()}, {"Readiness", c.GetReadinessProbe()}, {"Startup", c.GetStartupProbe()}} {
				if pr.p != nil {
					line(4, pr.name, probeString(pr.p))
				}
			}
			if len(c.GetEnv()) > 0 {
				b.WriteString("    Environment:\n")
				for _, e := range c.GetEnv() {
					fmt.Fprintf(&b, "      %s: %s\n", e.GetName(), e.GetValue())
				}
			}
		}
	}
	section("Init Containers", p.GetSpec().GetInitContainers())
	section("Containers", p.GetSpec().GetContainers())
	section("Ephemeral Containers", p.GetSpec().GetEphemeralContainers())

	if len(st.GetConditions()) > 0 {
		b.WriteString("Conditions:\n")
		rows := [][]string{{"  Type", "Status"}}
		for _, c := range st.GetConditions() {
			rows = append(rows, []string{"  " + c.GetType(), k8snames.ConditionStatus(c.GetStatus())})
		}
		b.WriteString(table(rows))
	}
	b.WriteString("Events:")
	if len(r.GetEvents()) == 0 {
		b.WriteString("  <none>\n")
		return b.String()
	}
	b.WriteString("\n")
	rows := [][]string{{"  Type", "Reason", "Age", "Message"}}
	for _, e := range r.GetEvents() {
		age := humanDuration(now.Sub(e.GetLastTime().AsTime()))
		if e.GetCount() > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", age, e.GetCount(), humanDuration(now.Sub(e.GetFirstTime().AsTime())))
		}
		msg := e.GetMessage()
		if c := e.GetInvolvedContainer(); c != "" {
			msg = "[" + c + "] " + msg
		}
		rows = append(rows, []string{"  " + k8snames.EventType(e.GetType()), e.GetReason(), age, msg})
	}
	b.WriteString(table(rows))
	return b.String()
}

func writeState(b *strings.Builder, title string, s *syncpodv1.ContainerStateDetail) {
	head := func(state string) { fmt.Fprintf(b, "    %-*s%s\n", max(10, len(title)+2), title+":", state) }
	switch {
	case s.GetRunning() != nil:
		head("Running")
		fmt.Fprintf(b, "      Started:    %s\n", s.GetRunning().GetStartedAt().AsTime().UTC().Format(time.RFC1123Z))
	case s.GetTerminated() != nil:
		t := s.GetTerminated()
		head("Terminated")
		fmt.Fprintf(b, "      Reason:     %s\n", t.GetReason())
		fmt.Fprintf(b, "      Exit Code:  %d\n", t.GetExitCode())
		if t.GetMessage() != "" {
			fmt.Fprintf(b, "      Message:    %s\n", t.GetMessage())
		}
		if t.GetStartedAt() != nil {
			fmt.Fprintf(b, "      Started:    %s\n", t.GetStartedAt().AsTime().UTC().Format(time.RFC1123Z))
		}
		if t.GetFinishedAt() != nil {
			fmt.Fprintf(b, "      Finished:   %s\n", t.GetFinishedAt().AsTime().UTC().Format(time.RFC1123Z))
		}
	case s.GetWaiting() != nil:
		head("Waiting")
		fmt.Fprintf(b, "      Reason:     %s\n", s.GetWaiting().GetReason())
		if m := s.GetWaiting().GetMessage(); m != "" {
			fmt.Fprintf(b, "      Message:    %s\n", m)
		}
	default:
		head("<unknown>")
	}
}

func probeString(p *syncpodv1.Probe) string {
	var what string
	switch h := p.GetHandler().(type) {
	case *syncpodv1.Probe_Exec:
		what = "exec " + fmt.Sprintf("%q", h.Exec.GetCommand())
	case *syncpodv1.Probe_TcpSocket:
		what = fmt.Sprintf("tcp-socket %s:%d", hostOrPod(h.TcpSocket.GetHost()), h.TcpSocket.GetPort())
	case *syncpodv1.Probe_HttpGet:
		what = fmt.Sprintf("http-get %s://%s:%d%s", strings.ToLower(cmpOr(h.HttpGet.GetScheme(), "http")), hostOrPod(h.HttpGet.GetHost()), h.HttpGet.GetPort(), h.HttpGet.GetPath())
	case *syncpodv1.Probe_Grpc:
		// As kubectl describes it: the port, then the service.
		what = strings.TrimSpace(fmt.Sprintf("grpc <pod>:%d %s", h.Grpc.GetPort(), h.Grpc.GetService()))
	}
	d := func(v, def int32) int32 {
		if v == 0 {
			return def
		}
		return v
	}
	return fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d", what,
		p.GetInitialDelaySeconds(), d(p.GetTimeoutSeconds(), 1), d(p.GetPeriodSeconds(), 10), d(p.GetSuccessThreshold(), 1), d(p.GetFailureThreshold(), 3))
}

func hostOrPod(h string) string { return cmpOr(h, "<pod>") }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func mapString(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, "\n              ")
}

func titleBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}

// describeActions explains a change set in plain words, in the order the
// executor carries it out.
func describeActions(a *syncpodv1.PodActions) string {
	var b strings.Builder
	n := 0
	step := func(format string, args ...any) {
		n++
		fmt.Fprintf(&b, "%d. %s\n", n, fmt.Sprintf(format, args...))
	}
	switch {
	case a.GetKillPod() && a.GetSandboxReason() == syncpodv1.SandboxReason_SANDBOX_REASON_NO_SANDBOX:
		step("kill the pod: a no-op, nothing of it runs yet (the kubelet always kills before a first sandbox, R-2.3)")
	case a.GetKillPod():
		step("kill the pod: stop every running container and sandbox (%s)", enumWords(a.GetKillPodReason().String(), "KILL_POD_REASON_"))
	}
	for _, s := range a.GetSidecarsToKeepRunning() {
		step("meanwhile start sidecar %s again whenever it exits before its turn to stop", s.GetName())
	}
	for _, k := range a.GetContainersToKill() {
		step("kill container %s (%s): %s", k.GetName(), shortID(k.GetContainerId()), cmpOr(k.GetMessage(), enumWords(k.GetReason().String(), "KILL_REASON_")))
	}
	for _, r := range a.GetContainersToReset() {
		verb := "remove"
		if r.GetKill() {
			verb = "stop and remove"
		}
		step("%s container %s (%s): %s", verb, r.GetName(), shortID(r.GetContainerId()), cmpOr(r.GetMessage(), "every container of the pod restarts"))
	}
	if a.GetCreateSandbox() {
		msg := enumWords(a.GetSandboxReason().String(), "SANDBOX_REASON_")
		if a.GetSandboxId() != "" {
			msg += ", replacing " + shortID(a.GetSandboxId())
		}
		step("create a sandbox, attempt %d (%s)", a.GetAttempt(), msg)
	}
	for _, s := range a.GetEphemeralContainersToStart() {
		step("start ephemeral container %s: %s", s.GetName(), cmpOr(s.GetMessage(), enumWords(s.GetReason().String(), "START_REASON_")))
	}
	for _, s := range a.GetInitContainersToStart() {
		step("start init container %s: %s", s.GetName(), cmpOr(s.GetMessage(), enumWords(s.GetReason().String(), "START_REASON_")))
	}
	for _, s := range a.GetContainersToStart() {
		step("start container %s: %s", s.GetName(), cmpOr(s.GetMessage(), enumWords(s.GetReason().String(), "START_REASON_")))
	}
	if n == 0 {
		b.WriteString("Nothing to do: the pod is as desired.\n")
	}
	if m := a.GetMessage(); m != "" {
		fmt.Fprintf(&b, "\n%s\n", m)
	}
	return b.String()
}

func enumWords(name, prefix string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, prefix), "_", " "))
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
