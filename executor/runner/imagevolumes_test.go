package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func imageVolume(name, ref string, policy syncpodv1.ImagePullPolicy) *syncpodv1.Volume {
	return &syncpodv1.Volume{Name: name, Source: &syncpodv1.Volume_Image{Image: &syncpodv1.ImageVolumeSource{Reference: ref, PullPolicy: policy}}}
}

// the pod's image volumes are pulled once, as
// steps of the pod, before its first container start; a container that
// mounts one whose pull failed fails with the pull's reason, the others
// get a read-only CRI image mount (the image's id, the reference, the
// subPath or expanded subPathExpr as image_sub_path, no host path), which
// crisim refuses.
func TestImageVolumesArePulledThenMountedByTheRuntime(t *testing.T) {
	rt, img := &recordingRuntime{Runtime: critest.NewRuntime(), mounts: map[string][]*runtimeapi.Mount{}}, critest.NewImages(busybox)
	podDir := t.TempDir()
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := volumeRunner(t, rt, img, podDir, Config{PodDir: podDir, Metrics: m})
	tools, data := ctr("tools"), ctr("data")
	tools.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "bin", MountPath: "/mnt/bin", SubPath: "bin"}, {Name: "root", MountPath: "/mnt/root"},
		{Name: "root", MountPath: "/mnt/etc", SubPathExpr: "$(DIR)"}}
	tools.Env = []*syncpodv1.EnvVar{{Name: "DIR", Value: "etc"}}
	data.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "root", MountPath: "/mnt/root"}, {Name: "missing", MountPath: "/mnt/data"}}
	pod := testPod(nil, tools, data)
	pod.Spec.Volumes = []*syncpodv1.Volume{
		imageVolume("bin", busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT),
		imageVolume("root", busybox, 0),
		imageVolume("missing", "registry.local/data:1", syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER),
	}
	resp, err := r.ApplyActionsWithSources(context.Background(), pod, nil,
		&syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("tools", "data")}, volumes.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	steps := resp.GetSteps()
	if len(steps) == 0 || steps[0].GetStep() != executorv1.Step_STEP_CREATE_SANDBOX {
		t.Fatalf("steps:\n%s", summary(resp))
	}
	want := "PULL_IMAGE  SUCCEEDED\nPULL_IMAGE  SUCCEEDED\nPULL_IMAGE  FAILED ErrImageNeverPull\n" +
		"PULL_IMAGE tools SUCCEEDED\nSTART_CONTAINER tools FAILED CreateContainerError\n" +
		"START_CONTAINER data FAILED ErrImageNeverPull\n"
	if got := summary(&executorv1.ApplyActionsResponse{Steps: steps[1:]}); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	refs := []string{busybox, busybox, "registry.local/data:1"}
	for i, st := range steps[1:4] {
		if st.GetImageVolumeReference() != refs[i] {
			t.Errorf("pull %d names %q, want %q", i, st.GetImageVolumeReference(), refs[i])
		}
	}
	if st := steps[5]; !strings.Contains(st.GetMessage(), "cannot mount image volumes") {
		t.Errorf("crisim's refusal: %q", st.GetMessage())
	}
	if st := steps[6]; st.GetImageVolumeReference() != "registry.local/data:1" ||
		st.GetMessage() != `Container image "registry.local/data:1" is not present with pull policy of Never` {
		t.Errorf("data's start: %v", st)
	}
	for _, st := range steps {
		if st.GetStep() == executorv1.Step_STEP_PULL_IMAGE && st.GetTarget() == "data" {
			t.Errorf("data's own image was pulled after its image volume failed: %v", st)
		}
	}

	// The kubelet's counters: tools' two volumes requested and its three
	// mounts "succeeded" (crisim's refusal is no ImageVolumeMountFailed);
	// data failed before, in its volume's pull, and counts nothing.
	for name, want := range map[string]float64{"requested": 2, "succeeded": 3, "failed": 0} {
		c := map[string]prometheus.Counter{"requested": m.imageVolumesRequested, "succeeded": m.imageVolumeMountsOK, "failed": m.imageVolumeMountsFailed}[name]
		if got := testutil.ToFloat64(c); got != want {
			t.Errorf("image volume mounts %s = %v, want %v", name, got, want)
		}
	}

	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.mounts["data"]; ok {
		t.Error("data was created")
	}
	byPath := map[string]*runtimeapi.Mount{}
	for _, m := range rt.mounts["tools"] {
		byPath[m.GetContainerPath()] = m
	}
	for path, sub := range map[string]string{"/mnt/bin": "bin", "/mnt/root": "", "/mnt/etc": "etc"} {
		m := byPath[path]
		if m == nil {
			t.Fatalf("no mount at %s: %v", path, rt.mounts["tools"])
		}
		if m.GetHostPath() != "" || !m.GetReadonly() || m.GetImageSubPath() != sub ||
			m.GetImage().GetUserSpecifiedImage() != busybox || m.GetImage().GetImage() == "" || m.GetImage().GetImage() == busybox {
			t.Errorf("%s: %v, want a read-only image mount of the image's id, sub path %q", path, m, sub)
		}
	}
}

// a creation the runtime refuses with a message starting
// ImageVolumeMountFailed counts every image volume mount of the
// container as failed; containerd 2.x's wording ("failed to mount image
// volume: ImageVolumeMountFailed: ...") does not start so, and counts as
// succeeded, as under the kubelet.
func TestImageVolumeMountCounters(t *testing.T) {
	for _, tc := range []struct {
		name              string
		err               error
		succeeded, failed float64
	}{
		{"runtime's ImageVolumeMountFailed", status.Error(codes.Unknown, "ImageVolumeMountFailed: no such path"), 0, 2},
		{"containerd 2.x's wording", status.Error(codes.Unknown, "failed to mount image volume: ImageVolumeMountFailed: no such path"), 2, 0},
		{"wrapped", fmt.Errorf("create: %w", status.Error(codes.Unknown, "ImageVolumeMountFailed: x")), 0, 2},
		{"another failure", errors.New("boom"), 2, 0},
		{"started", nil, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			c := ctr("c")
			c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "tools", MountPath: "/a"}, {Name: "tools", MountPath: "/b", SubPath: "bin"}, {Name: "other", MountPath: "/c"}}
			p := &pass{r: &Runner{m: m}, imageVolumes: map[string]imageVolumePull{"tools": {spec: &runtimeapi.ImageSpec{Image: "sha256:x"}}}}
			p.countImageVolumeMounts(c, tc.err)
			if got := testutil.ToFloat64(m.imageVolumesRequested); got != 1 {
				t.Errorf("requested %v, want 1 (one volume, mounted twice)", got)
			}
			if ok, bad := testutil.ToFloat64(m.imageVolumeMountsOK), testutil.ToFloat64(m.imageVolumeMountsFailed); ok != tc.succeeded || bad != tc.failed {
				t.Errorf("succeeded %v failed %v, want %v %v", ok, bad, tc.succeeded, tc.failed)
			}
		})
	}
}
