package kubeconv

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
)

func TestPodFromAPIKeepsWhatThePlannerRuns(t *testing.T) {
	kp := kubeconvtest.APIPod()
	p, warnings, err := PodFromAPI(kp)
	if err != nil {
		t.Fatalf("PodFromAPI: %v", err)
	}
	if p.GetName() != "web" || p.GetNamespace() != "team" || p.GetUid() != string(kp.UID) {
		t.Errorf("identity: %s/%s %s", p.GetNamespace(), p.GetName(), p.GetUid())
	}
	if p.GetAnnotations()["kubernetes.io/config.source"] != SourceAPI || p.GetAnnotations()["note"] != "x" || p.GetLabels()["app"] != "web" {
		t.Errorf("metadata: labels %v annotations %v", p.GetLabels(), p.GetAnnotations())
	}
	if kp.Annotations["kubernetes.io/config.source"] != "" || len(kp.Spec.Volumes) != 1 || len(kp.Spec.Containers[0].VolumeMounts) != 1 {
		t.Error("PodFromAPI changed its argument")
	}
	c := p.GetSpec().GetContainers()
	if len(c) != 1 || c[0].GetImage() != "busybox:1.36" || strings.Join(c[0].GetCommand(), " ") != "sleep 1000" {
		t.Errorf("containers: %v", c)
	}
	if p.GetSpec().GetTerminationGracePeriodSeconds() != 30 {
		t.Errorf("grace: %d", p.GetSpec().GetTerminationGracePeriodSeconds())
	}
	joined := strings.Join(warnings, "\n")
	// the API server's token volume is kept, and mounted where
	// in-cluster clients look for it.
	if strings.Contains(joined, "kube-api-access-x7k2p") {
		t.Errorf("a warning about the token volume: %q", joined)
	}
	vols := p.GetSpec().GetVolumes()
	if len(vols) != 1 || vols[0].GetName() != "kube-api-access-x7k2p" {
		t.Fatalf("volumes: %v", vols)
	}
	srcs := vols[0].GetProjected().GetSources()
	if len(srcs) != 3 || srcs[0].GetServiceAccountToken().GetExpirationSeconds() != 3607 || srcs[0].GetServiceAccountToken().GetPath() != "token" ||
		srcs[1].GetConfigMap().GetName() != "kube-root-ca.crt" || srcs[2].GetDownwardApi().GetItems()[0].GetFieldRef().GetFieldPath() != "metadata.namespace" ||
		vols[0].GetProjected().GetDefaultMode() != 0o644 {
		t.Errorf("token volume: %v", vols[0])
	}
	if m := c[0].GetVolumeMounts(); len(m) != 1 || m[0].GetMountPath() != "/var/run/secrets/kubernetes.io/serviceaccount" || !m[0].GetReadOnly() {
		t.Errorf("token mount: %v", m)
	}
	if err := validation.Pod(p); err != nil {
		t.Errorf("the converted pod is refused: %v", err)
	}
	// the agent honours enableServiceLinks; it is not reported
	// as ignored.
	if strings.Contains(joined, "enableServiceLinks") {
		t.Errorf("enableServiceLinks reported as ignored: %q", joined)
	}
	// Same input, same output: a restarted agent re-applies an identical pod.
	again, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Errorf("conversion is not deterministic:\n%s\n%s", a, b)
	}
}

func TestPodFromAPIRefusesWhatSyncpodCannotRun(t *testing.T) {
	kp := kubeconvtest.APIPod()
	// Fields syncpod refuses (the manifest reader's rules), each named: two
	// volume kinds a node cannot provide alone.
	kp.Spec.Volumes = append(kp.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
		corev1.Volume{Name: "share", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example", Path: "/x"}}})
	_, _, err := PodFromAPI(kp)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	for _, path := range []string{"persistentVolumeClaim", ".nfs"} {
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name %s", err, path)
		}
	}
}

func TestQOSClass(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	for _, tc := range []struct {
		name     string
		res      []corev1.ResourceRequirements
		want     corev1.PodQOSClass
		podLevel *corev1.ResourceRequirements
	}{
		// pod-level values decide when set.
		{name: "pod-level limits, containers without", res: []corev1.ResourceRequirements{{}}, want: corev1.PodQOSGuaranteed,
			podLevel: &corev1.ResourceRequirements{Limits: rl("1", "1Gi")}},
		{name: "pod-level requests below limits", res: []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}}, want: corev1.PodQOSBurstable,
			podLevel: &corev1.ResourceRequirements{Requests: rl("1", "512Mi"), Limits: rl("1", "1Gi")}},
		{name: "nothing", res: []corev1.ResourceRequirements{{}}, want: corev1.PodQOSBestEffort},
		{name: "limits only (requests default to them)", res: []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}}, want: corev1.PodQOSGuaranteed},
		{name: "requests equal limits", res: []corev1.ResourceRequirements{{Requests: rl("500m", "64Mi"), Limits: rl("0.5", "64Mi")}}, want: corev1.PodQOSGuaranteed},
		{name: "requests below limits", res: []corev1.ResourceRequirements{{Requests: rl("100m", "64Mi"), Limits: rl("1", "64Mi")}}, want: corev1.PodQOSBurstable},
		{name: "memory limit missing", res: []corev1.ResourceRequirements{{Limits: rl("1", "")}}, want: corev1.PodQOSBurstable},
		{name: "one container without", res: []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}, {}}, want: corev1.PodQOSBurstable},
		{name: "requests only", res: []corev1.ResourceRequirements{{Requests: rl("100m", "")}}, want: corev1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := corev1.PodSpec{Resources: tc.podLevel}
			for i, r := range tc.res {
				spec.Containers = append(spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			if got := QOSClass(&spec); got != tc.want {
				t.Errorf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStatusToAPI(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 700_000_000, time.UTC)
	ts := timestamppb.New(t0)
	st := &syncpodv1.PodStatus{
		Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING, PodIp: "10.1.0.5", StartTime: ts,
		Conditions: []*syncpodv1.PodCondition{{Type: "Ready", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE, LastTransitionTime: ts}},
		ContainerStatuses: []*syncpodv1.ContainerStatus{{
			Name: "app", RestartCount: 2, Ready: true, Started: true, ContainerId: "abc", Image: "busybox:1.36", StopSignal: "SIGUSR1",
			State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Running{Running: &syncpodv1.ContainerStateRunning{StartedAt: ts}}},
			LastTerminationState: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Terminated{
				Terminated: &syncpodv1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", ContainerId: "old"}}},
		}},
	}
	kp := kubeconvtest.APIPod()
	kp.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse},
	}
	got := StatusToAPI(st, kp, "192.0.2.1", 1)
	if got.Phase != corev1.PodRunning || got.PodIP != "10.1.0.5" || got.HostIP != "192.0.2.1" || got.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("status: %+v", got)
	}
	if got.StartTime == nil || !got.StartTime.Time.Equal(t0.Truncate(time.Second)) {
		t.Errorf("startTime %v, want %v at second resolution", got.StartTime, t0)
	}
	var types []string
	for _, c := range got.Conditions {
		types = append(types, string(c.Type)+"="+string(c.Status))
	}
	if strings.Join(types, ",") != "PodScheduled=True,Ready=True" {
		t.Errorf("conditions %v: the scheduler's kept, the node's replaced", types)
	}
	cs := got.ContainerStatuses[0]
	if cs.RestartCount != 2 || cs.State.Running == nil || cs.ContainerID != "cri://abc" ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("container status: %+v", cs)
	}
	if cs.StopSignal == nil || *cs.StopSignal != corev1.SIGUSR1 {
		t.Errorf("stopSignal %v, want SIGUSR1", cs.StopSignal)
	}
	kp.Spec.HostNetwork = true
	if got := StatusToAPI(st, kp, "192.0.2.1", 1); got.PodIP != "192.0.2.1" {
		t.Errorf("host-network pod IP %q, want the host's", got.PodIP)
	}
	if got := StatusToAPI(&syncpodv1.PodStatus{}, kp, "", 1); got.Phase != corev1.PodPending {
		t.Errorf("no phase yet: %q, want Pending", got.Phase)
	}
}

// what the API server accepts converts. A pod with a 200-character
// name, spec.os.name linux, an overhead from its RuntimeClass, pod-level
// resources and envFrom prefixes as the API server allows them
// is a valid planner pod, and renders back with the same os, overhead and
// resources.
func TestPodFromAPIAcceptsWhatTheAPIServerAccepts(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Name = "pod-" + strings.Repeat("n", 196)
	kp.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
	kp.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("1Mi")}
	kp.Spec.RuntimeClassName = ptr.To("with-overhead")
	kp.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	for _, prefix := range []string{"1-", "$_-", "#@!"} {
		kp.Spec.Containers[0].EnvFrom = append(kp.Spec.Containers[0].EnvFrom, corev1.EnvFromSource{
			Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}})
	}
	p, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatalf("PodFromAPI: %v", err)
	}
	if err := validation.Pod(p); err != nil {
		t.Fatalf("the converted pod is refused: %v", err)
	}
	s := p.GetSpec()
	if p.GetName() != kp.Name || s.GetOs().GetName() != "linux" || s.GetOverhead().GetCpu() != "10m" || s.GetOverhead().GetMemory() != "1Mi" {
		t.Errorf("name %d characters, os %v, overhead %v", len(p.GetName()), s.GetOs(), s.GetOverhead())
	}
	if r := s.GetResources().GetLimits(); r.GetCpu() != "2" || r.GetMemory() != "1Gi" {
		t.Errorf("pod-level resources %v", s.GetResources())
	}
	if ef := s.GetContainers()[0].GetEnvFrom(); len(ef) != 3 || ef[0].GetPrefix() != "1-" {
		t.Errorf("envFrom = %v", ef)
	}
	back := PodToAPI(&plannerv1.PodRecord{Pod: p})
	if back.Spec.OS == nil || back.Spec.OS.Name != corev1.Linux || !back.Spec.Overhead.Cpu().Equal(resource.MustParse("10m")) ||
		!back.Spec.Overhead.Memory().Equal(resource.MustParse("1Mi")) {
		t.Errorf("PodToAPI: os %v, overhead %v", back.Spec.OS, back.Spec.Overhead)
	}
	if back.Spec.Resources == nil || !back.Spec.Resources.Limits.Memory().Equal(resource.MustParse("1Gi")) {
		t.Errorf("PodToAPI: pod-level resources %v", back.Spec.Resources)
	}
}

// TestStatusToAPIReportsTheObservedGeneration. The generation the
// status is of is status.observedGeneration and the observedGeneration of
// each condition the node writes, PodScheduled included; a condition of
// another owner keeps its own.
func TestStatusToAPIReportsTheObservedGeneration(t *testing.T) {
	st := &syncpodv1.PodStatus{
		Phase: syncpodv1.PodPhase_POD_PHASE_PENDING,
		Conditions: []*syncpodv1.PodCondition{
			{Type: "PodReadyToStartContainers", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE},
			{Type: "Initialized", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE},
			{Type: "Ready", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE},
			{Type: "ContainersReady", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE},
		},
	}
	kp := kubeconvtest.APIPod()
	kp.Generation = 7
	kp.Status.ObservedGeneration = 6
	kp.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: 1},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, ObservedGeneration: 3},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, ObservedGeneration: 6},
	}
	got := StatusToAPI(st, kp, "192.0.2.1", 7)
	if got.ObservedGeneration != 7 {
		t.Errorf("observedGeneration %d, want 7", got.ObservedGeneration)
	}
	var gens []string
	for _, c := range got.Conditions {
		gens = append(gens, fmt.Sprintf("%s=%d", c.Type, c.ObservedGeneration))
	}
	want := "PodScheduled=7,DisruptionTarget=3,PodReadyToStartContainers=7,Initialized=7,Ready=7,ContainersReady=7"
	if strings.Join(gens, ",") != want {
		t.Errorf("conditions %v, want %s", gens, want)
	}
	if kp.Status.Conditions[0].ObservedGeneration != 1 {
		t.Error("StatusToAPI changed its argument")
	}
}

// TestPodFromAPICarriesTheGeneration: the API object's metadata.generation
// travels with the pod to the planner as its source generation.
func TestPodFromAPICarriesTheGeneration(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Generation = 42
	p, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatal(err)
	}
	if p.GetSourceGeneration() != 42 || p.GetGeneration() != 0 {
		t.Errorf("source generation %d, generation %d; want 42 and 0 (the planner's own)", p.GetSourceGeneration(), p.GetGeneration())
	}
}

// TestGRPCProbesGoBothWays: a grpc probe of an API pod reaches
// the planner with its port and service, and PodToAPI renders it back.
func TestGRPCProbesGoBothWays(t *testing.T) {
	kp := kubeconvtest.APIPod()
	service := "ready"
	kp.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 5000}}, TimeoutSeconds: 5}
	kp.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 5001, Service: &service}}}
	p, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatal(err)
	}
	c := p.GetSpec().GetContainers()[0]
	if g := c.GetLivenessProbe().GetGrpc(); g.GetPort() != 5000 || g.GetService() != "" || c.GetLivenessProbe().GetTimeoutSeconds() != 5 {
		t.Errorf("liveness probe %v", c.GetLivenessProbe())
	}
	if g := c.GetReadinessProbe().GetGrpc(); g.GetPort() != 5001 || g.GetService() != "ready" {
		t.Errorf("readiness probe %v", c.GetReadinessProbe())
	}
	back := PodToAPI(&plannerv1.PodRecord{Pod: p}).Spec.Containers[0]
	if g := back.ReadinessProbe.GRPC; g == nil || g.Port != 5001 || g.Service == nil || *g.Service != "ready" || g.Mode != nil {
		t.Errorf("rendered back: %+v", back.ReadinessProbe)
	}
}

// TestEphemeralContainersThroughTheAPI: a pod whose
// ephemeralcontainers subresource added a debugger converts with it (with
// the token mount the API server may add, R-21.1), renders
// back, and its status reports ephemeralContainerStatuses.
func TestEphemeralContainersThroughTheAPI(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36",
			Command: []string{"sh"}, Stdin: true, TTY: true, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			VolumeMounts: []corev1.VolumeMount{{Name: kp.Spec.Volumes[0].Name, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}},
		TargetContainerName: kp.Spec.Containers[0].Name,
	}}
	p, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatalf("PodFromAPI: %v", err)
	}
	ec := p.GetSpec().GetEphemeralContainers()
	if len(ec) != 1 || ec[0].GetName() != "debugger" || ec[0].GetTargetContainerName() != kp.Spec.Containers[0].Name ||
		!ec[0].GetStdin() || !ec[0].GetTty() || len(ec[0].GetVolumeMounts()) != 1 {
		t.Fatalf("ephemeral containers: %v", ec)
	}
	if len(kp.Spec.EphemeralContainers[0].VolumeMounts) != 1 {
		t.Error("PodFromAPI changed its argument")
	}
	back := PodToAPI(&plannerv1.PodRecord{Pod: p})
	if len(back.Spec.EphemeralContainers) != 1 || back.Spec.EphemeralContainers[0].TargetContainerName != kp.Spec.Containers[0].Name {
		t.Errorf("PodToAPI ephemeral containers: %+v", back.Spec.EphemeralContainers)
	}
	running := &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Running{Running: &syncpodv1.ContainerStateRunning{StartedAt: timestamppb.Now()}}}
	st := &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
		ContainerStatuses:          []*syncpodv1.ContainerStatus{{Name: "app", Ready: true, State: running}},
		EphemeralContainerStatuses: []*syncpodv1.ContainerStatus{{Name: "debugger", ContainerId: "d1", Image: "busybox:1.36", State: running}},
	}
	got := StatusToAPI(st, kp, "192.0.2.1", 1)
	if len(got.EphemeralContainerStatuses) != 1 || len(got.ContainerStatuses) != 1 {
		t.Fatalf("statuses: %+v", got)
	}
	if es := got.EphemeralContainerStatuses[0]; es.Name != "debugger" || es.State.Running == nil || es.ContainerID != "cri://d1" || es.Ready {
		t.Errorf("ephemeral status: %+v", es)
	}
}

// TestRestartAllContainersRulesGoBothWays: a pod whose container
// has a RestartAllContainers rule (beside a Restart one), on a sidecar too,
// converts with the action kept, and renders back the same.
func TestRestartAllContainersRulesGoBothWays(t *testing.T) {
	kp := kubeconvtest.APIPod()
	never, always := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyAlways
	rules := []corev1.ContainerRestartRule{
		{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}},
		{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}},
	}
	kp.Spec.Containers[0].RestartPolicy = &never
	kp.Spec.Containers[0].RestartPolicyRules = rules
	kp.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox", RestartPolicy: &always, RestartPolicyRules: rules[:1]}}
	p, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatal(err)
	}
	got := p.GetSpec().GetContainers()[0].GetRestartPolicyRules()
	if len(got) != 2 || got[0].GetAction() != syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS ||
		got[1].GetAction() != syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART {
		t.Fatalf("rules converted to %v", got)
	}
	back := PodToAPI(&plannerv1.PodRecord{Pod: p}).Spec
	if b := back.Containers[0].RestartPolicyRules; len(b) != 2 || b[0].Action != corev1.ContainerRestartRuleActionRestartAllContainers || b[1].Action != corev1.ContainerRestartRuleActionRestart {
		t.Errorf("rendered back: %+v", b)
	}
	if b := back.InitContainers[0].RestartPolicyRules; len(b) != 1 || b[0].Action != corev1.ContainerRestartRuleActionRestartAllContainers {
		t.Errorf("sidecar rendered back: %+v", b)
	}
}

// TestAllContainersRestartingIsTheNodesCondition: the node owns
// the AllContainersRestarting condition, as the kubelet does: the one the
// API server holds is replaced, not kept beside the node's.
func TestAllContainersRestartingIsTheNodesCondition(t *testing.T) {
	st := &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING, Conditions: []*syncpodv1.PodCondition{
		{Type: "AllContainersRestarting", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE},
	}}
	kp := kubeconvtest.APIPod()
	kp.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue, Reason: "RestartAllContainersStarted"},
	}
	var types []string
	for _, c := range StatusToAPI(st, kp, "", 1).Conditions {
		types = append(types, string(c.Type)+"="+string(c.Status))
	}
	if got := strings.Join(types, ","); got != "PodScheduled=True,AllContainersRestarting=False" {
		t.Errorf("conditions %s", got)
	}
}

// TestStatusToAPIReportsAPodBoundByNameScheduled. A pod bound by
// spec.nodeName never met the scheduler; the node reports PodScheduled
// true all the same, as the kubelet, and keeps the scheduler's condition
// when there is one.
func TestStatusToAPIReportsAPodBoundByNameScheduled(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Status.Conditions = nil
	start := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	got := StatusToAPI(&syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING, StartTime: start}, kp, "", 3)
	var scheduled []corev1.PodCondition
	for _, c := range got.Conditions {
		if c.Type == corev1.PodScheduled {
			scheduled = append(scheduled, c)
		}
	}
	if len(scheduled) != 1 || scheduled[0].Status != corev1.ConditionTrue || scheduled[0].ObservedGeneration != 3 ||
		!scheduled[0].LastTransitionTime.Time.Equal(start.AsTime()) {
		t.Fatalf("PodScheduled conditions %+v, want one, true, of generation 3, since the start", scheduled)
	}

	byScheduler := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: byScheduler}}
	got = StatusToAPI(&syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING, StartTime: start}, kp, "", 3)
	n := 0
	for _, c := range got.Conditions {
		if c.Type == corev1.PodScheduled {
			n++
			if !c.LastTransitionTime.Equal(&byScheduler) {
				t.Errorf("the scheduler's PodScheduled changed: %+v", c)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d PodScheduled conditions, want the scheduler's alone", n)
	}
}

// the node shutdown's DisruptionTarget reaches the API pod once:
// the planner's copy replaces the one the API server already has, and a
// condition the planner does not report stays as the API server has it.
func TestStatusToAPIReportsTheShutdownsDisruptionTargetOnce(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Status.Conditions = []corev1.PodCondition{
		{Type: "DisruptionTarget", Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"},
		{Type: "example.com/gate", Status: corev1.ConditionTrue},
	}
	st := &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_FAILED, Reason: "Terminated", Conditions: []*syncpodv1.PodCondition{
		{Type: "DisruptionTarget", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE, Reason: "TerminationByKubelet",
			Message: "Pod was terminated in response to imminent node shutdown."}}}
	got := StatusToAPI(st, kp, "", 1)
	n, gate := 0, 0
	for _, c := range got.Conditions {
		switch c.Type {
		case "DisruptionTarget":
			n++
			if c.Message != "Pod was terminated in response to imminent node shutdown." {
				t.Errorf("DisruptionTarget %+v, want the planner's", c)
			}
		case "example.com/gate":
			gate++
		}
	}
	if n != 1 || gate != 1 || got.Reason != "Terminated" || got.Phase != corev1.PodFailed {
		t.Fatalf("conditions %+v, reason %q phase %q: want one DisruptionTarget, the gate kept, Failed Terminated", got.Conditions, got.Reason, got.Phase)
	}
}

// TestHostUsersGoesBothWays: an API pod's hostUsers reaches the
// planner as set and PodToAPI renders it back.
func TestHostUsersGoesBothWays(t *testing.T) {
	for _, v := range []*bool{nil, new(false), new(true)} {
		kp := kubeconvtest.APIPod()
		kp.Spec.HostUsers = v
		p, _, err := PodFromAPI(kp)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.GetSpec().HostUsers; (got == nil) != (v == nil) || (got != nil && *got != *v) {
			t.Errorf("hostUsers %v reached the planner as %v", v, got)
		}
		back := PodToAPI(&plannerv1.PodRecord{Pod: p})
		if got := back.Spec.HostUsers; (got == nil) != (v == nil) || (got != nil && *got != *v) {
			t.Errorf("hostUsers %v rendered back as %v", v, got)
		}
	}
}

// an image volume of a pod from the API server (the pull policy
// defaulted there) reaches the planner as an image volume source, and a
// mount of it keeps its subPath.
func TestPodFromAPIConvertsImageVolumes(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Spec.Volumes = append(kp.Spec.Volumes, corev1.Volume{Name: "tools", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: "localhost/syncpod/busybox:1.36", PullPolicy: corev1.PullNever}}})
	kp.Spec.Containers[0].VolumeMounts = append(kp.Spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "tools", MountPath: "/mnt/tools", SubPath: "bin"})
	p, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatalf("PodFromAPI: %v", err)
	}
	if err := validation.Pod(p); err != nil {
		t.Fatalf("the converted pod is refused: %v", err)
	}
	var img *syncpodv1.ImageVolumeSource
	for _, v := range p.GetSpec().GetVolumes() {
		if v.GetName() == "tools" {
			img = v.GetImage()
		}
	}
	if img.GetReference() != "localhost/syncpod/busybox:1.36" || img.GetPullPolicy() != syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER {
		t.Errorf("image volume %v", img)
	}
	mounts := p.GetSpec().GetContainers()[0].GetVolumeMounts()
	if m := mounts[len(mounts)-1]; m.GetName() != "tools" || m.GetSubPath() != "bin" {
		t.Errorf("mount %v", m)
	}
}
