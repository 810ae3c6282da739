package validation_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func debugPod(ecs ...*syncpodv1.Container) *syncpodv1.Pod {
	return &syncpodv1.Pod{Name: "p", Spec: &syncpodv1.PodSpec{
		InitContainers:      []*syncpodv1.Container{{Name: "setup", Image: "busybox"}},
		Containers:          []*syncpodv1.Container{{Name: "app", Image: "busybox"}},
		Volumes:             []*syncpodv1.Volume{{Name: "data", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}},
		EphemeralContainers: ecs,
	}}
}

// an ephemeral container may set what a debugging container needs
// (image, command, env, mounts, security context, stdin and tty, a
// target) and nothing that makes it part of the workload.
func TestEphemeralContainersValidatedAsTheAPIServer(t *testing.T) {
	ok := &syncpodv1.Container{
		Name: "debugger", Image: "busybox", Command: []string{"sh"}, Stdin: true, Tty: true,
		TargetContainerName: "app",
		Env:                 []*syncpodv1.EnvVar{{Name: "A", Value: "b"}},
		VolumeMounts:        []*syncpodv1.VolumeMount{{Name: "data", MountPath: "/data"}},
		Resources:           &syncpodv1.ResourceRequirements{}, // empty: as unset
	}
	if err := validation.Pod(debugPod(ok, &syncpodv1.Container{Name: "second", Image: "busybox", TargetContainerName: "setup"})); err != nil {
		t.Fatalf("valid ephemeral containers refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		ec   *syncpodv1.Container
		want []string
	}{
		{"name shared with a regular container", &syncpodv1.Container{Name: "app", Image: "busybox"},
			[]string{"spec.ephemeral_containers[0].name"}},
		{"name shared with an init container", &syncpodv1.Container{Name: "setup", Image: "busybox"},
			[]string{"spec.ephemeral_containers[0].name"}},
		{"no image", &syncpodv1.Container{Name: "d"}, []string{"spec.ephemeral_containers[0].image"}},
		{"target not in the pod", &syncpodv1.Container{Name: "d", Image: "busybox", TargetContainerName: "nope"},
			[]string{"spec.ephemeral_containers[0].target_container_name"}},
		{"workload fields", &syncpodv1.Container{Name: "d", Image: "busybox",
			Ports:          []*syncpodv1.ContainerPort{{ContainerPort: 80}},
			Resources:      &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Cpu: "1"}},
			LivenessProbe:  &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}},
			ReadinessProbe: &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}},
			StartupProbe:   &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}},
			Lifecycle:      &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_Sleep{Sleep: &syncpodv1.SleepAction{Seconds: 1}}}},
			RestartPolicy:  syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS,
			VolumeMounts:   []*syncpodv1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}},
		}, []string{
			"spec.ephemeral_containers[0].lifecycle",
			"spec.ephemeral_containers[0].liveness_probe",
			"spec.ephemeral_containers[0].ports",
			"spec.ephemeral_containers[0].readiness_probe",
			"spec.ephemeral_containers[0].resources",
			"spec.ephemeral_containers[0].restart_policy",
			"spec.ephemeral_containers[0].startup_probe",
			"spec.ephemeral_containers[0].volume_mounts[0].sub_path",
		}},
		{"mount of an unknown volume", &syncpodv1.Container{Name: "d", Image: "busybox",
			VolumeMounts: []*syncpodv1.VolumeMount{{Name: "nope", MountPath: "/d"}}},
			[]string{"spec.ephemeral_containers[0].volume_mounts[0].name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validation.Pod(debugPod(tc.ec))
			var got []string
			for _, fe := range fielderr.As(err) {
				if !slices.Contains(got, fe.Path) {
					got = append(got, fe.Path)
				}
				if strings.HasSuffix(fe.Path, "probe") || strings.HasSuffix(fe.Path, "ports") {
					if !strings.Contains(fe.Message, "ephemeral container") {
						t.Errorf("%s: message %q does not say why", fe.Path, fe.Message)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("paths = %v\nwant %v\n(%v)", got, tc.want, err)
			}
		})
	}
}

func TestTargetContainerNameOnlyOnEphemeralContainers(t *testing.T) {
	pod := debugPod()
	pod.Spec.Containers[0].TargetContainerName = "setup"
	if got := errPaths(validation.Pod(pod)); !slices.Equal(got, []string{"spec.containers[0].target_container_name"}) {
		t.Errorf("paths = %v", got)
	}
}
