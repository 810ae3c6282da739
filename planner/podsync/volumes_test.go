package podsync_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/podsync"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// configVolumePod mounts ConfigMap "cfg", reads Secret "creds" into env
// and takes every key of ConfigMap "env" (twice: named once).
func configVolumePod() *syncpodv1.Pod {
	c := &syncpodv1.Container{Name: "app", Image: "busybox",
		VolumeMounts: []*syncpodv1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
		Env: []*syncpodv1.EnvVar{{Name: "PW", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{
			SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "creds", Key: "pw"}}}}},
		EnvFrom: []*syncpodv1.EnvFromSource{{ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "env"}}, {ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "cfg"}}},
	}
	return &syncpodv1.Pod{Uid: podUID, Name: "web", Namespace: "default", Spec: &syncpodv1.PodSpec{
		Volumes:    []*syncpodv1.Volume{{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "cfg"}}}},
		Containers: []*syncpodv1.Container{c},
	}}
}

func TestConfigReferencesNamesEachObjectOnce(t *testing.T) {
	cms, secs := podsync.ConfigReferences(configVolumePod())
	if want := []string{"cfg", "env"}; !slices.Equal(cms, want) {
		t.Errorf("config maps %v, want %v", cms, want)
	}
	if want := []string{"creds"}; !slices.Equal(secs, want) {
		t.Errorf("secrets %v, want %v", secs, want)
	}
	if cms, secs := podsync.ConfigReferences(&syncpodv1.Pod{Spec: &syncpodv1.PodSpec{}}); cms != nil || secs != nil {
		t.Errorf("a pod without references: %v %v", cms, secs)
	}
}

// TestConfigReferencesNameThePodsTokenSecret: a service account token
// source makes the pod read its token Secret, so a new token reaches the
// file as any Secret change does.
func TestConfigReferencesNameThePodsTokenSecret(t *testing.T) {
	pod := configVolumePod()
	pod.Spec.Volumes = append(pod.Spec.Volumes, &syncpodv1.Volume{Name: "kube-api-access-x7k2p", Source: &syncpodv1.Volume_Projected{Projected: &syncpodv1.ProjectedVolumeSource{
		Sources: []*syncpodv1.VolumeProjection{
			{Source: &syncpodv1.VolumeProjection_ServiceAccountToken{ServiceAccountToken: &syncpodv1.ServiceAccountTokenProjection{Path: "token"}}},
			{Source: &syncpodv1.VolumeProjection_ConfigMap{ConfigMap: &syncpodv1.ConfigMapProjection{Name: "kube-root-ca.crt"}}},
		}}}})
	cms, secs := podsync.ConfigReferences(pod)
	if want := []string{"cfg", "kube-root-ca.crt", "env"}; !slices.Equal(cms, want) {
		t.Errorf("config maps %v, want %v", cms, want)
	}
	if want := []string{validation.TokenSecretName(podUID), "creds"}; !slices.Equal(secs, want) {
		t.Errorf("secrets %v, want %v", secs, want)
	}
}

// running is the pod's runtime state with its one container running (at
// the spec hash plan.Compute wants, so nothing is to be done) in a ready
// sandbox.
func running(pod *syncpodv1.Pod) *syncpodv1.ObservedPod {
	at := timestamppb.New(t0)
	return &syncpodv1.ObservedPod{Uid: podUID, Name: "web", Namespace: "default",
		Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: at, Ip: "10.0.0.2"}},
		Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "app", SandboxId: "s1", CreatedAt: at, StartedAt: at,
			State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SpecHash: plan.SpecHash(pod.GetSpec().GetContainers()[0])}},
	}
}

// Config-fed volumes follow their objects on every sync of a running pod,
// whether the sync applied a change set or not.
func TestARunningPodWithConfigVolumesAsksForARefreshOnEverySync(t *testing.T) {
	pod := configVolumePod()
	obs := running(pod)
	rec := &plannerv1.PodRecord{Pod: pod}
	w := podsync.Step(podsync.Input{Record: rec, Observed: obs, Now: t0.Add(time.Second)})
	if w.Apply != nil || !w.RefreshVolumes || w.RemoveVolumes {
		t.Errorf("idle sync: apply %v, refresh %v, remove volumes %v; want a refresh only", w.Apply, w.RefreshVolumes, w.RemoveVolumes)
	}
	applied := podsync.Step(podsync.Input{Record: rec, Observed: obs, Now: t0.Add(time.Second),
		Applied: &podsync.Applied{Actions: &syncpodv1.PodActions{}, Result: &executorv1.ApplyActionsResponse{}}})
	if !applied.RefreshVolumes {
		t.Error("the step after a change set asks for no volume refresh")
	}
	// No ready sandbox: nothing to refresh yet.
	obs.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
	if w := podsync.Step(podsync.Input{Record: rec, Observed: obs, Now: t0.Add(time.Second)}); w.RefreshVolumes {
		t.Error("a pod without a ready sandbox asks for a volume refresh")
	}
	// No config-fed volume: nothing to refresh.
	plain := configVolumePod()
	plain.Spec.Volumes = []*syncpodv1.Volume{{Name: "config", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}}
	if w := podsync.Step(podsync.Input{Record: &plannerv1.PodRecord{Pod: plain}, Observed: running(plain), Now: t0.Add(time.Second)}); w.RefreshVolumes {
		t.Error("a pod with only an emptyDir asks for a volume refresh")
	}
}

// A deleted pod's and an orphan's volume directories go with their last
// container and sandbox.
func TestRemovalsOfDeletedPodsAndOrphansRemoveTheirVolumes(t *testing.T) {
	pod := configVolumePod()
	pod.DeletionTime = timestamppb.New(t0)
	stopped := &syncpodv1.ObservedPod{Uid: podUID,
		Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY, CreatedAt: pod.DeletionTime}}}
	w := podsync.Step(podsync.Input{Record: &plannerv1.PodRecord{Pod: pod}, Observed: stopped, Now: t0.Add(time.Minute)})
	if !w.Drop || !w.RemoveVolumes || w.RefreshVolumes {
		t.Errorf("deleted pod: drop %v, remove volumes %v, refresh %v; want drop and remove volumes", w.Drop, w.RemoveVolumes, w.RefreshVolumes)
	}
	o := podsync.Step(podsync.Input{Observed: stopped, Now: t0.Add(time.Minute)})
	if !o.RemoveVolumes || !slices.Equal(o.Remove.Sandboxes, []string{"s1"}) {
		t.Errorf("orphan: remove %+v, remove volumes %v; want s1 and its volumes", o.Remove, o.RemoveVolumes)
	}
	// A deleted pod that still runs is killed first; its volumes stay.
	if k := podsync.Step(podsync.Input{Record: &plannerv1.PodRecord{Pod: pod}, Observed: running(pod), Now: t0.Add(time.Minute)}); k.Apply == nil || k.RemoveVolumes {
		t.Errorf("running deleted pod: apply %v, remove volumes %v; want a kill only", k.Apply, k.RemoveVolumes)
	}
}
