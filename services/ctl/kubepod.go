package ctl

import (
	"maps"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/syncpod/syncpod/proto/k8snames"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// kubePod renders a pod record as a Kubernetes v1 Pod: the spec is the
// inverse of the planner's manifest conversion, so `apply -f` of the result
// stores the same pod again; metadata the API server would set and the
// status are filled in for reading (apply ignores them with a warning).
func kubePod(r *plannerv1.PodRecord) *corev1.Pod {
	p := r.GetPod()
	kp := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.GetName(),
			Namespace:   namespaceOf(p),
			UID:         types.UID(p.GetUid()),
			Labels:      maps.Clone(p.GetLabels()),
			Annotations: maps.Clone(p.GetAnnotations()),
		},
	}
	if t := p.GetCreationTime(); t != nil {
		kp.CreationTimestamp = metav1.NewTime(t.AsTime())
	}
	if t := p.GetDeletionTime(); t != nil {
		dt := metav1.NewTime(t.AsTime())
		kp.DeletionTimestamp = &dt
		kp.DeletionGracePeriodSeconds = p.DeletionGracePeriodSeconds
	}
	s := p.GetSpec()
	kp.Spec = corev1.PodSpec{
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		HostNetwork:                   s.GetHostNetwork(),
		Hostname:                      s.GetHostname(),
		RestartPolicy: map[syncpodv1.RestartPolicy]corev1.RestartPolicy{
			syncpodv1.RestartPolicy_RESTART_POLICY_ALWAYS:     corev1.RestartPolicyAlways,
			syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE: corev1.RestartPolicyOnFailure,
			syncpodv1.RestartPolicy_RESTART_POLICY_NEVER:      corev1.RestartPolicyNever,
		}[s.GetRestartPolicy()],
	}
	for _, c := range s.GetInitContainers() {
		kp.Spec.InitContainers = append(kp.Spec.InitContainers, kubeContainer(c))
	}
	for _, c := range s.GetContainers() {
		kp.Spec.Containers = append(kp.Spec.Containers, kubeContainer(c))
	}
	kp.Status = kubeStatus(r.GetStatus())
	return kp
}

func kubeContainer(c *syncpodv1.Container) corev1.Container {
	kc := corev1.Container{
		Name:       c.GetName(),
		Image:      c.GetImage(),
		Command:    c.GetCommand(),
		Args:       c.GetArgs(),
		WorkingDir: c.GetWorkingDir(),
		Stdin:      c.GetStdin(),
		StdinOnce:  c.GetStdinOnce(),
		TTY:        c.GetTty(),
		ImagePullPolicy: map[syncpodv1.ImagePullPolicy]corev1.PullPolicy{
			syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS:         corev1.PullAlways,
			syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT: corev1.PullIfNotPresent,
			syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER:          corev1.PullNever,
		}[c.GetImagePullPolicy()],
	}
	for _, e := range c.GetEnv() {
		kc.Env = append(kc.Env, corev1.EnvVar{Name: e.GetName(), Value: e.GetValue()})
	}
	if rp, ok := map[syncpodv1.ContainerRestartPolicy]corev1.ContainerRestartPolicy{
		syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS:     corev1.ContainerRestartPolicyAlways,
		syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE: corev1.ContainerRestartPolicyOnFailure,
		syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER:      corev1.ContainerRestartPolicyNever,
	}[c.GetRestartPolicy()]; ok {
		kc.RestartPolicy = &rp
	}
	for _, r := range c.GetRestartPolicyRules() {
		rule := corev1.ContainerRestartRule{}
		if r.GetAction() == syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART {
			rule.Action = corev1.ContainerRestartRuleActionRestart
		}
		if ec := r.GetExitCodes(); ec != nil {
			rule.ExitCodes = &corev1.ContainerRestartRuleOnExitCodes{Values: ec.GetValues()}
			switch ec.GetOperator() {
			case syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN:
				rule.ExitCodes.Operator = corev1.ContainerRestartRuleOnExitCodesOpIn
			case syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_NOT_IN:
				rule.ExitCodes.Operator = corev1.ContainerRestartRuleOnExitCodesOpNotIn
			}
		}
		kc.RestartPolicyRules = append(kc.RestartPolicyRules, rule)
	}
	for _, p := range c.GetPorts() {
		kc.Ports = append(kc.Ports, corev1.ContainerPort{
			Name: p.GetName(), ContainerPort: p.GetContainerPort(), HostPort: p.GetHostPort(), HostIP: p.GetHostIp(),
			Protocol: map[syncpodv1.Protocol]corev1.Protocol{
				syncpodv1.Protocol_PROTOCOL_TCP:  corev1.ProtocolTCP,
				syncpodv1.Protocol_PROTOCOL_UDP:  corev1.ProtocolUDP,
				syncpodv1.Protocol_PROTOCOL_SCTP: corev1.ProtocolSCTP,
			}[p.GetProtocol()],
		})
	}
	kc.Resources = corev1.ResourceRequirements{
		Requests: kubeResources(c.GetResources().GetRequests()),
		Limits:   kubeResources(c.GetResources().GetLimits()),
	}
	kc.LivenessProbe = kubeProbe(c.GetLivenessProbe())
	kc.ReadinessProbe = kubeProbe(c.GetReadinessProbe())
	kc.StartupProbe = kubeProbe(c.GetStartupProbe())
	return kc
}

func kubeResources(l *syncpodv1.ResourceList) corev1.ResourceList {
	if l == nil {
		return nil
	}
	out := corev1.ResourceList{}
	if q, err := resource.ParseQuantity(l.GetCpu()); err == nil && l.GetCpu() != "" {
		out[corev1.ResourceCPU] = q
	}
	if q, err := resource.ParseQuantity(l.GetMemory()); err == nil && l.GetMemory() != "" {
		out[corev1.ResourceMemory] = q
	}
	return out
}

func kubeProbe(p *syncpodv1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	kp := &corev1.Probe{
		InitialDelaySeconds:           p.GetInitialDelaySeconds(),
		TimeoutSeconds:                p.GetTimeoutSeconds(),
		PeriodSeconds:                 p.GetPeriodSeconds(),
		SuccessThreshold:              p.GetSuccessThreshold(),
		FailureThreshold:              p.GetFailureThreshold(),
		TerminationGracePeriodSeconds: p.TerminationGracePeriodSeconds,
	}
	switch {
	case p.GetExec() != nil:
		kp.Exec = &corev1.ExecAction{Command: p.GetExec().GetCommand()}
	case p.GetTcpSocket() != nil:
		kp.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(p.GetTcpSocket().GetPort()), Host: p.GetTcpSocket().GetHost()}
	case p.GetHttpGet() != nil:
		h := p.GetHttpGet()
		g := &corev1.HTTPGetAction{Path: h.GetPath(), Port: intstr.FromInt32(h.GetPort()), Host: h.GetHost(), Scheme: corev1.URIScheme(h.GetScheme())}
		for _, hd := range h.GetHttpHeaders() {
			g.HTTPHeaders = append(g.HTTPHeaders, corev1.HTTPHeader{Name: hd.GetName(), Value: hd.GetValue()})
		}
		kp.HTTPGet = g
	}
	return kp
}

func kubeTime(t *timestamppb.Timestamp) metav1.Time {
	if t == nil {
		return metav1.Time{}
	}
	return metav1.NewTime(t.AsTime())
}

func kubeStatus(st *syncpodv1.PodStatus) corev1.PodStatus {
	out := corev1.PodStatus{
		Phase:   corev1.PodPhase(k8snames.PodPhase(st.GetPhase())),
		Reason:  st.GetReason(),
		Message: st.GetMessage(),
		PodIP:   st.GetPodIp(),
	}
	if st.GetPhase() == syncpodv1.PodPhase_POD_PHASE_UNSPECIFIED {
		out.Phase = ""
	}
	if st.GetStartTime() != nil {
		t := kubeTime(st.GetStartTime())
		out.StartTime = &t
	}
	for _, c := range st.GetConditions() {
		out.Conditions = append(out.Conditions, corev1.PodCondition{
			Type: corev1.PodConditionType(c.GetType()), Status: corev1.ConditionStatus(k8snames.ConditionStatus(c.GetStatus())),
			LastTransitionTime: kubeTime(c.GetLastTransitionTime()), Reason: c.GetReason(), Message: c.GetMessage(),
		})
	}
	for _, cs := range st.GetInitContainerStatuses() {
		out.InitContainerStatuses = append(out.InitContainerStatuses, kubeContainerStatus(cs))
	}
	for _, cs := range st.GetContainerStatuses() {
		out.ContainerStatuses = append(out.ContainerStatuses, kubeContainerStatus(cs))
	}
	return out
}

func kubeContainerStatus(cs *syncpodv1.ContainerStatus) corev1.ContainerStatus {
	started := cs.GetStarted()
	return corev1.ContainerStatus{
		Name: cs.GetName(), Ready: cs.GetReady(), Started: &started, RestartCount: cs.GetRestartCount(),
		Image: cs.GetImage(), ContainerID: cs.GetContainerId(),
		State: kubeState(cs.GetState()), LastTerminationState: kubeState(cs.GetLastTerminationState()),
	}
}

func kubeState(s *syncpodv1.ContainerStateDetail) corev1.ContainerState {
	var out corev1.ContainerState
	switch {
	case s.GetWaiting() != nil:
		out.Waiting = &corev1.ContainerStateWaiting{Reason: s.GetWaiting().GetReason(), Message: s.GetWaiting().GetMessage()}
	case s.GetRunning() != nil:
		out.Running = &corev1.ContainerStateRunning{StartedAt: kubeTime(s.GetRunning().GetStartedAt())}
	case s.GetTerminated() != nil:
		t := s.GetTerminated()
		out.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.GetExitCode(), Signal: t.GetSignal(), Reason: t.GetReason(),
			Message: t.GetMessage(), StartedAt: kubeTime(t.GetStartedAt()), FinishedAt: kubeTime(t.GetFinishedAt()), ContainerID: t.GetContainerId()}
	}
	return out
}
