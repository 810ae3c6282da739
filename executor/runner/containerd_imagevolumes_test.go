package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/executor/backoff"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// runtimeMajor is the major version of the containerd under test.
func runtimeMajor(t *testing.T, x *real) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := x.cd.Runtime.Version(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range strings.TrimPrefix(v.GetRuntimeVersion(), "v") {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	t.Logf("runtime under test: %s %s", v.GetRuntimeName(), v.GetRuntimeVersion())
	return n
}

// TestContainerdImageVolume. The local busybox image is
// mounted as a volume (pull policies IfNotPresent and Never: it is
// imported, never pulled). On containerd 2.x the container reads
// /bin/busybox through the whole-image mount and /etc/passwd through a
// subPath mount, and cannot write to either; a subPath missing from the
// image fails that container's creation (CreateContainerError). containerd
// 1.6 predates image mounts: it ignores the CRI field it does not know and
// refuses the mount's empty host path, so the container fails with
// CreateContainerError as under the kubelet, which asks the runtime
// nothing beforehand.
func TestContainerdImageVolume(t *testing.T) {
	x := newReal(t, backoff.Config{})
	withVolumes(t, x)
	bb := x.cd.Busybox
	reader := sh("reader", bb, `test -x /mnt/vol/bin/busybox && echo present=yes
echo "passwd=$(head -n 1 /mnt/etc/passwd)"
echo "ro=$(touch /mnt/vol/x 2>/dev/null && echo writable || echo read-only)"
echo "subro=$(touch /mnt/etc/x 2>/dev/null && echo writable || echo read-only)"
trap "exit 0" TERM; while true; do sleep 0.2; done`)
	reader.VolumeMounts = []*syncpodv1.VolumeMount{
		{Name: "root", MountPath: "/mnt/vol"},
		{Name: "etc", MountPath: "/mnt/etc", SubPath: "etc"},
	}
	missing := sh("missing", bb, "echo never")
	missing.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "root", MountPath: "/mnt/none", SubPath: "no/such/dir"}}
	pod := realPod(t, x, nil, reader, missing)
	pod.Spec.Volumes = []*syncpodv1.Volume{
		{Name: "root", Source: &syncpodv1.Volume_Image{Image: &syncpodv1.ImageVolumeSource{Reference: bb, PullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT}}},
		{Name: "etc", Source: &syncpodv1.Volume_Image{Image: &syncpodv1.ImageVolumeSource{Reference: bb, PullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}}},
	}
	resp := x.apply(t, pod, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("reader", "missing")})
	starts := map[string]*executorv1.StepResult{}
	volumePulls := 0
	for _, s := range resp.GetSteps() {
		switch s.GetStep() {
		case executorv1.Step_STEP_START_CONTAINER:
			starts[s.GetTarget()] = s
		case executorv1.Step_STEP_PULL_IMAGE:
			if s.GetTarget() == "" {
				volumePulls++
				if s.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED || s.GetImageVolumeReference() != bb {
					t.Errorf("image volume pull: %v", s)
				}
			}
		}
	}
	if volumePulls != 2 {
		t.Errorf("%d image volume pulls, want 2:\n%v", volumePulls, resp.GetSteps())
	}
	if s := starts["missing"]; s.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || s.GetReason() != "CreateContainerError" {
		t.Errorf("missing subPath: %v", s)
	}
	if runtimeMajor(t, x) < 2 {
		s := starts["reader"]
		t.Logf("reader on a runtime without image mounts: %s %s", s.GetReason(), s.GetMessage())
		if s.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || s.GetReason() != "CreateContainerError" || !strings.Contains(s.GetMessage(), `failed to mkdir ""`) {
			t.Fatalf("reader: %v, want CreateContainerError for the empty host path", s)
		}
		return
	}
	if s := starts["reader"]; s.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
		t.Fatalf("reader: %v %s %s", s.GetOutcome(), s.GetReason(), s.GetMessage())
	}
	// The runtime's refusal of an image mount starts with the CRI's
	// ImageVolumeMountFailed, which the kubelet counts.
	if m := starts["missing"].GetMessage(); !strings.Contains(m, "ImageVolumeMountFailed") || !strings.Contains(m, "no/such/dir") {
		t.Errorf("missing subPath on containerd: %s", m)
	}
	got := waitLog(t, x, pod, "reader", "subro=")
	for _, want := range []string{"present=yes", "passwd=root:x:0:0:root:/root:/bin/sh", "ro=read-only", "subro=read-only"} {
		if !strings.Contains(got, want) {
			t.Errorf("reader log lacks %q:\n%s", want, got)
		}
	}
}
