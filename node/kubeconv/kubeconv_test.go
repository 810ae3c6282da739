package kubeconv

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

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
	if !strings.Contains(joined, "kube-api-access-x7k2p") {
		t.Errorf("no warning about the dropped token volume: %q", joined)
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
		name string
		res  []corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"nothing", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		{"limits only (requests default to them)", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"requests equal limits", []corev1.ResourceRequirements{{Requests: rl("500m", "64Mi"), Limits: rl("0.5", "64Mi")}}, corev1.PodQOSGuaranteed},
		{"requests below limits", []corev1.ResourceRequirements{{Requests: rl("100m", "64Mi"), Limits: rl("1", "64Mi")}}, corev1.PodQOSBurstable},
		{"memory limit missing", []corev1.ResourceRequirements{{Limits: rl("1", "")}}, corev1.PodQOSBurstable},
		{"one container without", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}, {}}, corev1.PodQOSBurstable},
		{"requests only", []corev1.ResourceRequirements{{Requests: rl("100m", "")}}, corev1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec corev1.PodSpec
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
			Name: "app", RestartCount: 2, Ready: true, Started: true, ContainerId: "abc", Image: "busybox:1.36",
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
	got := StatusToAPI(st, kp, "192.0.2.1")
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
	kp.Spec.HostNetwork = true
	if got := StatusToAPI(st, kp, "192.0.2.1"); got.PodIP != "192.0.2.1" {
		t.Errorf("host-network pod IP %q, want the host's", got.PodIP)
	}
	if got := StatusToAPI(&syncpodv1.PodStatus{}, kp, ""); got.Phase != corev1.PodPending {
		t.Errorf("no phase yet: %q, want Pending", got.Phase)
	}
}

// TestEphemeralContainersThroughTheAPI: a pod whose
// ephemeralcontainers subresource added a debugger converts with it (the
// token mount the API server may add dropped with the volume), renders
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
		!ec[0].GetStdin() || !ec[0].GetTty() || len(ec[0].GetVolumeMounts()) != 0 {
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
	got := StatusToAPI(st, kp, "192.0.2.1")
	if len(got.EphemeralContainerStatuses) != 1 || len(got.ContainerStatuses) != 1 {
		t.Fatalf("statuses: %+v", got)
	}
	if es := got.EphemeralContainerStatuses[0]; es.Name != "debugger" || es.State.Running == nil || es.ContainerID != "cri://d1" || es.Ready {
		t.Errorf("ephemeral status: %+v", es)
	}
}
