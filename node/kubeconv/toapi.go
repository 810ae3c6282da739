package kubeconv

import (
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/proto/k8snames"
	"github.com/syncpod/syncpod/proto/podresources"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// PodToAPI renders a pod record as a Kubernetes v1 Pod: the spec is the
// inverse of the planner's manifest conversion, so `apply -f` of the result
// stores the same pod again; metadata the API server would set and the
// status are filled in for reading (apply ignores them with a warning).
func PodToAPI(r *plannerv1.PodRecord) *corev1.Pod {
	p := r.GetPod()
	kp := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.GetName(),
			Namespace:   validation.NamespaceOrDefault(p.GetNamespace()),
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
	kp.Spec = specToAPI(p.GetSpec())
	kp.Status = podStatus(r.GetStatus(), "")
	return kp
}

// specToAPI is the inverse of the manifest conversion of a pod spec: every
// field the pod proto carries, an unset one left unset.
func specToAPI(s *syncpodv1.PodSpec) corev1.PodSpec {
	ks := corev1.PodSpec{
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		ActiveDeadlineSeconds:         s.ActiveDeadlineSeconds,
		HostNetwork:                   s.GetHostNetwork(),
		HostPID:                       s.GetHostPid(),
		HostIPC:                       s.GetHostIpc(),
		ShareProcessNamespace:         s.ShareProcessNamespace,
		HostUsers:                     s.HostUsers,
		Hostname:                      s.GetHostname(),
		Priority:                      s.Priority,
		RestartPolicy:                 restartPolicyToAPI(s.GetRestartPolicy()),
		DNSPolicy:                     dnsPolicies[s.GetDnsPolicy()],
		DNSConfig:                     dnsConfigToAPI(s.GetDnsConfig()),
		HostAliases:                   hostAliasesToAPI(s.GetHostAliases()),
		SecurityContext:               podSecurityContextToAPI(s.GetSecurityContext()),
		Volumes:                       volumesToAPI(s.GetVolumes()),
	}
	if rc := s.GetRuntimeClassName(); rc != "" {
		ks.RuntimeClassName = &rc
	}
	if os := s.GetOs(); os != nil {
		ks.OS = &corev1.PodOS{Name: corev1.OSName(os.GetName())}
	}
	if r := s.GetResources(); r != nil {
		ks.Resources = &corev1.ResourceRequirements{
			Requests: resourcesToAPI(r.GetRequests()),
			Limits:   resourcesToAPI(r.GetLimits()),
		}
	}
	if o := s.GetOverhead(); o != nil {
		ks.Overhead = resourcesToAPI(o)
	}
	for _, c := range s.GetInitContainers() {
		ks.InitContainers = append(ks.InitContainers, containerToAPI(c))
	}
	for _, c := range s.GetContainers() {
		ks.Containers = append(ks.Containers, containerToAPI(c))
	}
	for _, c := range s.GetEphemeralContainers() {
		kc := containerToAPI(c)
		ks.EphemeralContainers = append(ks.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon(kc), TargetContainerName: c.GetTargetContainerName()})
	}
	return ks
}

func containerToAPI(c *syncpodv1.Container) corev1.Container {
	kc := corev1.Container{
		Name:                     c.GetName(),
		Image:                    c.GetImage(),
		Command:                  c.GetCommand(),
		Args:                     c.GetArgs(),
		WorkingDir:               c.GetWorkingDir(),
		Env:                      envToAPI(c.GetEnv()),
		EnvFrom:                  envFromToAPI(c.GetEnvFrom()),
		VolumeMounts:             volumeMountsToAPI(c.GetVolumeMounts()),
		Stdin:                    c.GetStdin(),
		StdinOnce:                c.GetStdinOnce(),
		TTY:                      c.GetTty(),
		ImagePullPolicy:          PullPolicyToAPI(c.GetImagePullPolicy()),
		SecurityContext:          securityContextToAPI(c.GetSecurityContext()),
		Lifecycle:                lifecycleToAPI(c.GetLifecycle()),
		TerminationMessagePath:   c.GetTerminationMessagePath(),
		TerminationMessagePolicy: terminationMessagePolicies[c.GetTerminationMessagePolicy()],
	}
	if n := k8snames.ContainerRestartPolicy(c.GetRestartPolicy()); n != "" {
		rp := corev1.ContainerRestartPolicy(n)
		kc.RestartPolicy = &rp
	}
	for _, r := range c.GetRestartPolicyRules() {
		rule := corev1.ContainerRestartRule{}
		switch r.GetAction() {
		case syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART:
			rule.Action = corev1.ContainerRestartRuleActionRestart
		case syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS:
			rule.Action = corev1.ContainerRestartRuleActionRestartAllContainers
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
		Requests: resourcesToAPI(c.GetResources().GetRequests()),
		Limits:   resourcesToAPI(c.GetResources().GetLimits()),
	}
	for _, rp := range c.GetResizePolicy() {
		policy := corev1.ContainerResizePolicy{ResourceName: corev1.ResourceName(rp.GetResourceName()), RestartPolicy: corev1.NotRequired}
		if rp.GetRestartPolicy() == syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER {
			policy.RestartPolicy = corev1.RestartContainer
		}
		kc.ResizePolicy = append(kc.ResizePolicy, policy)
	}
	kc.LivenessProbe = probeToAPI(c.GetLivenessProbe())
	kc.ReadinessProbe = probeToAPI(c.GetReadinessProbe())
	kc.StartupProbe = probeToAPI(c.GetStartupProbe())
	return kc
}

func resourcesToAPI(l *syncpodv1.ResourceList) corev1.ResourceList {
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

func probeToAPI(p *syncpodv1.Probe) *corev1.Probe {
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
		kp.Exec = execToAPI(p.GetExec())
	case p.GetTcpSocket() != nil:
		kp.TCPSocket = tcpSocketToAPI(p.GetTcpSocket())
	case p.GetHttpGet() != nil:
		kp.HTTPGet = httpGetToAPI(p.GetHttpGet())
	case p.GetGrpc() != nil:
		g := p.GetGrpc()
		kp.GRPC = &corev1.GRPCAction{Port: g.GetPort(), Service: ptr.To(g.GetService())}
		if g.GetTls() {
			kp.GRPC.Mode = ptr.To(corev1.GRPCProbeModeTLS)
		}
	}
	return kp
}

// ownedConditions are the pod conditions the node reports; others (such
// as the scheduler's PodScheduled) are kept as the API server has them.
var ownedConditions = map[corev1.PodConditionType]bool{
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReady:                  true,
	corev1.PodReadyToStartContainers: true,
	corev1.AllContainersRestarting:   true,
	corev1.PodResizePending:          true,
	corev1.PodResizeInProgress:       true,
}

// ForeignConditions are the conditions of kp that the node does not own
// (such as the scheduler's PodScheduled), kept as the API server has them.
func ForeignConditions(kp *corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range kp.Status.Conditions {
		if !ownedConditions[c.Type] {
			out = append(out, c)
		}
	}
	return out
}

// StatusToAPI renders the planner's status of a pod as the Kubernetes pod
// status the node reports: phase (Pending until the planner has one),
// conditions (after the ones of kp that the node does not own), container
// statuses with cri:// container ids, pod and host IPs, start time and QoS
// class. A host-network pod's IP is the host's. generation is the pod's
// metadata.generation this status is of: it is the status's
// observedGeneration and that of every condition the node reports, and of
// the scheduler's PodScheduled too, which the kubelet also rewrites.
func StatusToAPI(st *syncpodv1.PodStatus, kp *corev1.Pod, hostIP string, generation int64) corev1.PodStatus {
	out := podStatus(st, "cri")
	if out.Phase == "" {
		out.Phase = corev1.PodPending
	}
	out.QOSClass = QOSClass(&kp.Spec)
	if kp.Spec.HostNetwork && hostIP != "" {
		out.PodIP = hostIP
	}
	if out.PodIP != "" {
		out.PodIPs = []corev1.PodIP{{IP: out.PodIP}}
	}
	if hostIP != "" {
		out.HostIP = hostIP
		out.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	out.ObservedGeneration = generation
	for i := range out.Conditions {
		out.Conditions[i].ObservedGeneration = generation
	}
	// A condition the planner's status carries beyond the owned ones (the
	// node shutdown's DisruptionTarget, R-24.3) replaces the API
	// server's copy of it.
	reported := map[corev1.PodConditionType]bool{}
	for _, c := range out.Conditions {
		reported[c.Type] = true
	}
	foreign := slices.DeleteFunc(ForeignConditions(kp), func(c corev1.PodCondition) bool { return reported[c.Type] })
	scheduled := false
	for i := range foreign {
		if foreign[i].Type == corev1.PodScheduled {
			foreign[i].ObservedGeneration = generation
			scheduled = true
		}
	}
	out.Conditions = append(foreign, out.Conditions...)
	if !scheduled {
		// A pod bound by nodeName never met the scheduler; the kubelet
		// reports it scheduled all the same, from when it
		// started the pod.
		since := kp.CreationTimestamp
		if out.StartTime != nil {
			since = *out.StartTime
		}
		out.Conditions = append(out.Conditions, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: generation, LastTransitionTime: since,
		})
	}
	return out
}

// podStatus renders what the planner knows of a pod's status: phase (empty
// while the planner has none), reason, message, pod IP, start time,
// conditions and container statuses (init, regular and ephemeral, R-6.4). idScheme, when set, prefixes the
// container ids that carry no scheme ("cri" gives cri://<id>), as a node
// reports them to the API server.
func podStatus(st *syncpodv1.PodStatus, idScheme string) corev1.PodStatus {
	out := corev1.PodStatus{
		Phase:   corev1.PodPhase(k8snames.PodPhase(st.GetPhase())),
		Reason:  st.GetReason(),
		Message: st.GetMessage(),
		PodIP:   st.GetPodIp(),
	}
	if t := st.GetStartTime(); t != nil {
		mt := apiTime(t)
		out.StartTime = &mt
	}
	for _, c := range st.GetConditions() {
		out.Conditions = append(out.Conditions, corev1.PodCondition{
			Type:               corev1.PodConditionType(c.GetType()),
			Status:             conditionToAPI(c.GetStatus()),
			LastTransitionTime: apiTime(c.GetLastTransitionTime()),
			Reason:             c.GetReason(),
			Message:            c.GetMessage(),
		})
	}
	for _, cs := range st.GetInitContainerStatuses() {
		out.InitContainerStatuses = append(out.InitContainerStatuses, containerStatusToAPI(cs, idScheme))
	}
	for _, cs := range st.GetContainerStatuses() {
		out.ContainerStatuses = append(out.ContainerStatuses, containerStatusToAPI(cs, idScheme))
	}
	for _, cs := range st.GetEphemeralContainerStatuses() {
		out.EphemeralContainerStatuses = append(out.EphemeralContainerStatuses, containerStatusToAPI(cs, idScheme))
	}
	return out
}

// PullPolicyToAPI is the API's spelling of an image pull policy; the
// empty policy for an unset one.
func PullPolicyToAPI(p syncpodv1.ImagePullPolicy) corev1.PullPolicy {
	return map[syncpodv1.ImagePullPolicy]corev1.PullPolicy{
		syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS:         corev1.PullAlways,
		syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT: corev1.PullIfNotPresent,
		syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER:          corev1.PullNever,
	}[p]
}

func conditionToAPI(s syncpodv1.ConditionStatus) corev1.ConditionStatus {
	return corev1.ConditionStatus(k8snames.ConditionStatus(s))
}

// apiTime is t at the API's resolution (seconds), so that a status read
// back from the API server compares equal to the one written.
func apiTime(t *timestamppb.Timestamp) metav1.Time {
	if t == nil {
		return metav1.Time{}
	}
	return metav1.NewTime(t.AsTime().Truncate(1e9).UTC())
}

// containerID is id with idScheme:// in front when id has no scheme and
// idScheme is set.
func containerID(id, idScheme string) string {
	if id == "" || idScheme == "" || strings.Contains(id, "://") {
		return id
	}
	return idScheme + "://" + id
}

func containerStatusToAPI(cs *syncpodv1.ContainerStatus, idScheme string) corev1.ContainerStatus {
	started := cs.GetStarted()
	out := corev1.ContainerStatus{
		Name:                 cs.GetName(),
		Ready:                cs.GetReady(),
		Started:              &started,
		RestartCount:         cs.GetRestartCount(),
		Image:                cs.GetImage(),
		ContainerID:          containerID(cs.GetContainerId(), idScheme),
		State:                stateToAPI(cs.GetState(), idScheme),
		LastTerminationState: stateToAPI(cs.GetLastTerminationState(), idScheme),
	}
	if sig := cs.GetStopSignal(); sig != "" {
		out.StopSignal = (*corev1.Signal)(&sig)
	}
	if r := cs.GetResources(); r != nil {
		out.Resources = &corev1.ResourceRequirements{
			Requests: resourcesToAPI(r.GetRequests()),
			Limits:   resourcesToAPI(r.GetLimits()),
		}
	}
	out.AllocatedResources = resourcesToAPI(cs.GetAllocatedResources())
	return out
}

func stateToAPI(s *syncpodv1.ContainerStateDetail, idScheme string) corev1.ContainerState {
	var out corev1.ContainerState
	switch {
	case s.GetWaiting() != nil:
		out.Waiting = &corev1.ContainerStateWaiting{Reason: s.GetWaiting().GetReason(), Message: s.GetWaiting().GetMessage()}
	case s.GetRunning() != nil:
		out.Running = &corev1.ContainerStateRunning{StartedAt: apiTime(s.GetRunning().GetStartedAt())}
	case s.GetTerminated() != nil:
		t := s.GetTerminated()
		out.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: t.GetExitCode(), Signal: t.GetSignal(), Reason: t.GetReason(), Message: t.GetMessage(),
			StartedAt: apiTime(t.GetStartedAt()), FinishedAt: apiTime(t.GetFinishedAt()), ContainerID: containerID(t.GetContainerId(), idScheme),
		}
	}
	return out
}

// QOSClass is the pod's quality-of-service class by the Kubernetes rules,
// computed as the executor computes it (podresources.QOS, R-23.5): from
// spec.resources alone when it sets CPU or memory; otherwise from every
// container's (init containers included) requests, an unset one taken as
// its limit.
func QOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	reqs := func(r corev1.ResourceRequirements) *syncpodv1.ResourceRequirements {
		return &syncpodv1.ResourceRequirements{Requests: manifest.ComputeList(r.Requests), Limits: manifest.ComputeList(r.Limits)}
	}
	ps := &syncpodv1.PodSpec{}
	for _, c := range spec.InitContainers {
		sc := &syncpodv1.Container{Resources: reqs(c.Resources)}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sc.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
		}
		ps.InitContainers = append(ps.InitContainers, sc)
	}
	for _, c := range spec.Containers {
		ps.Containers = append(ps.Containers, &syncpodv1.Container{Resources: reqs(c.Resources)})
	}
	if spec.Resources != nil {
		ps.Resources = reqs(*spec.Resources)
	}
	return corev1.PodQOSClass(podresources.QOS(&syncpodv1.Pod{Spec: ps}))
}
