package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/syncpod/syncpod/planner/manifest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// SourceAPI is the value of manifest.SourceAnnotation on pods this agent
// put in the planner, as the kubelet marks pods from the API server.
const SourceAPI = "api"

// ErrUnsupported classifies a pod the planner cannot run (a field syncpod
// does not implement); the issues are in the message.
var ErrUnsupported = errors.New("unsupported pod")

// serviceAccountVolumePrefix starts the name of the projected volume the
// API server's ServiceAccount admission adds to every pod that mounts its
// token.
const serviceAccountVolumePrefix = "kube-api-access-"

// PodFromAPI converts a pod bound to this node into a desired pod for the
// planner, with the same conversion (and the same refusals) static
// manifests get. Only name, namespace, uid, labels and annotations of the
// metadata are kept; the annotations gain kubernetes.io/config.source=api.
// The service-account token volume the API server injects is dropped (with
// a warning): syncpod does not mount it. Warnings are fields ignored; an
// error wraps ErrUnsupported and lists every field refused.
func PodFromAPI(kp *corev1.Pod) (*syncpodv1.Pod, []string, error) {
	ann := maps.Clone(kp.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[manifest.SourceAnnotation] = SourceAPI
	trimmed := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: kp.Name, Namespace: kp.Namespace, UID: kp.UID,
			Labels: maps.Clone(kp.Labels), Annotations: ann,
		},
		Spec: *kp.Spec.DeepCopy(),
	}
	var warnings []string
	if dropped := dropServiceAccountToken(&trimmed.Spec); dropped != "" {
		warnings = append(warnings, fmt.Sprintf("spec.volumes: service-account token volume %s is not mounted by syncpod", dropped))
	}
	js, err := json.Marshal(&trimmed)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	pods, issues, err := manifest.Parse(js)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if len(pods) != 1 {
		return nil, nil, fmt.Errorf("%w: conversion gave %d pods", ErrUnsupported, len(pods))
	}
	for _, is := range issues {
		warnings = append(warnings, is.String())
	}
	return pods[0], warnings, nil
}

// isServiceAccountVolume says whether v is the projected service-account
// token volume the API server adds.
func isServiceAccountVolume(v corev1.Volume) bool {
	return strings.HasPrefix(v.Name, serviceAccountVolumePrefix) && v.Projected != nil
}

// dropServiceAccountToken removes the projected service-account token
// volume and its mounts; it returns the volume's name, or "".
func dropServiceAccountToken(spec *corev1.PodSpec) string {
	name := ""
	kept := spec.Volumes[:0]
	for _, v := range spec.Volumes {
		if isServiceAccountVolume(v) {
			name = v.Name
			continue
		}
		kept = append(kept, v)
	}
	if name == "" {
		return ""
	}
	spec.Volumes = kept
	if len(spec.Volumes) == 0 {
		spec.Volumes = nil
	}
	strip := func(cs []corev1.Container) {
		for i := range cs {
			m := cs[i].VolumeMounts[:0]
			for _, vm := range cs[i].VolumeMounts {
				if vm.Name != name {
					m = append(m, vm)
				}
			}
			cs[i].VolumeMounts = m
			if len(m) == 0 {
				cs[i].VolumeMounts = nil
			}
		}
	}
	strip(spec.InitContainers)
	strip(spec.Containers)
	return name
}

// ownedConditions are the pod conditions the node reports; others (such
// as the scheduler's PodScheduled) are kept as the API server has them.
var ownedConditions = map[corev1.PodConditionType]bool{
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReady:                  true,
	corev1.PodReadyToStartContainers: true,
}

// StatusToAPI renders the planner's status of a pod as the Kubernetes pod
// status the node reports: phase, conditions (merged with the ones of
// current that the node does not own), container statuses, pod and host
// IPs, start time and QoS class. A host-network pod's IP is the host's.
func StatusToAPI(st *syncpodv1.PodStatus, kp *corev1.Pod, hostIP string) corev1.PodStatus {
	out := corev1.PodStatus{
		Phase:    phaseToAPI(st.GetPhase()),
		Reason:   st.GetReason(),
		Message:  st.GetMessage(),
		PodIP:    st.GetPodIp(),
		QOSClass: QOSClass(&kp.Spec),
	}
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
	if t := st.GetStartTime(); t != nil {
		mt := apiTime(t)
		out.StartTime = &mt
	}
	for _, c := range kp.Status.Conditions {
		if !ownedConditions[c.Type] {
			out.Conditions = append(out.Conditions, c)
		}
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
		out.InitContainerStatuses = append(out.InitContainerStatuses, containerStatusToAPI(cs))
	}
	for _, cs := range st.GetContainerStatuses() {
		out.ContainerStatuses = append(out.ContainerStatuses, containerStatusToAPI(cs))
	}
	return out
}

func phaseToAPI(p syncpodv1.PodPhase) corev1.PodPhase {
	switch p {
	case syncpodv1.PodPhase_POD_PHASE_RUNNING:
		return corev1.PodRunning
	case syncpodv1.PodPhase_POD_PHASE_SUCCEEDED:
		return corev1.PodSucceeded
	case syncpodv1.PodPhase_POD_PHASE_FAILED:
		return corev1.PodFailed
	case syncpodv1.PodPhase_POD_PHASE_UNKNOWN:
		return corev1.PodUnknown
	default:
		return corev1.PodPending
	}
}

func conditionToAPI(s syncpodv1.ConditionStatus) corev1.ConditionStatus {
	switch s {
	case syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE:
		return corev1.ConditionTrue
	case syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE:
		return corev1.ConditionFalse
	default:
		return corev1.ConditionUnknown
	}
}

// apiTime is t at the API's resolution (seconds), so that a status read
// back from the API server compares equal to the one written.
func apiTime(t *timestamppb.Timestamp) metav1.Time {
	if t == nil {
		return metav1.Time{}
	}
	return metav1.NewTime(t.AsTime().Truncate(1e9).UTC())
}

func containerStatusToAPI(cs *syncpodv1.ContainerStatus) corev1.ContainerStatus {
	started := cs.GetStarted()
	id := cs.GetContainerId()
	if id != "" && !strings.Contains(id, "://") {
		id = "cri://" + id
	}
	return corev1.ContainerStatus{
		Name:                 cs.GetName(),
		Ready:                cs.GetReady(),
		Started:              &started,
		RestartCount:         cs.GetRestartCount(),
		Image:                cs.GetImage(),
		ContainerID:          id,
		State:                stateToAPI(cs.GetState()),
		LastTerminationState: stateToAPI(cs.GetLastTerminationState()),
	}
}

func stateToAPI(s *syncpodv1.ContainerStateDetail) corev1.ContainerState {
	var out corev1.ContainerState
	switch {
	case s.GetWaiting() != nil:
		out.Waiting = &corev1.ContainerStateWaiting{Reason: s.GetWaiting().GetReason(), Message: s.GetWaiting().GetMessage()}
	case s.GetRunning() != nil:
		out.Running = &corev1.ContainerStateRunning{StartedAt: apiTime(s.GetRunning().GetStartedAt())}
	case s.GetTerminated() != nil:
		t := s.GetTerminated()
		id := t.GetContainerId()
		if id != "" && !strings.Contains(id, "://") {
			id = "cri://" + id
		}
		out.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: t.GetExitCode(), Signal: t.GetSignal(), Reason: t.GetReason(), Message: t.GetMessage(),
			StartedAt: apiTime(t.GetStartedAt()), FinishedAt: apiTime(t.GetFinishedAt()), ContainerID: id,
		}
	}
	return out
}

// QOSClass is the pod's quality-of-service class by the Kubernetes rules:
// BestEffort when no container (init containers included) requests or
// limits CPU or memory; Guaranteed when every container limits both and
// requests equal limits (an unset request defaults to the limit);
// Burstable otherwise.
func QOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	compute := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	any, guaranteed := false, true
	for _, c := range all {
		for _, r := range compute {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				any = true
			}
			if !hasLim || lim.IsZero() {
				guaranteed = false
				continue
			}
			if hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}
