package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// checkImageVolumesOnContainerd: through the
// whole stack, on the node of TestSiteExampleOnContainerd (one node start
// for both). The example examples/containerd/image-volume.yaml, on the
// local busybox image: on containerd 2.x its container finds the image's
// /bin/busybox, reads its /etc/passwd through a subPath and cannot write
// to the volume; on containerd 1.6, which cannot mount images, it waits in
// CreateContainerError with the runtime's refusal, as under the kubelet.
// On both, an image volume whose image cannot be pulled fails only the
// container that mounts it (ErrImagePull, the pull's events on the pod)
// while the pod's other container runs.
func checkImageVolumesOnContainerd(t *testing.T, n *node) {
	t.Helper()
	busybox := containerdtest.BusyboxImage()
	v, err := n.cri.Version(rpcCtx(t), "v1")
	if err != nil {
		t.Fatal(err)
	}
	mounts := !strings.HasPrefix(strings.TrimPrefix(v.GetRuntimeVersion(), "v"), "1.")
	t.Logf("runtime %s %s: mounts images: %v", v.GetRuntimeName(), v.GetRuntimeVersion(), mounts)

	b, err := os.ReadFile("../../examples/containerd/image-volume.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "image-volume.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(b), "busybox:1.36", busybox)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := n.ctl("apply", "-f", file); code != 0 {
		t.Fatalf("apply image-volume.yaml: exit %d: %s %s", code, out, errOut)
	}

	const absent = "localhost/syncpod/absent:1" // a pull from loopback that fails
	c := func(name string) *syncpodv1.Container {
		return &syncpodv1.Container{Name: name, Image: busybox, Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
			ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
	}
	uses, ignores := c("uses"), c("ignores")
	uses.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "absent", MountPath: "/mnt/absent"}}
	p := pod("image-volume-absent", uses, ignores)
	p.Spec.HostNetwork = true
	p.Spec.Volumes = []*syncpodv1.Volume{{Name: "absent", Source: &syncpodv1.Volume_Image{Image: &syncpodv1.ImageVolumeSource{
		Reference: absent, PullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT}}}}
	stored := n.apply(p)
	// Deleted at the end, whatever the outcome: a node kills the pods it
	// does not know, with their grace period, so leftovers slow the next.
	defer func() {
		uids := []string{stored.GetUid()}
		if r, err := n.get("image-volume"); err == nil {
			uids = append(uids, r.GetPod().GetUid())
		}
		if code, o, e := n.ctl("delete", "pod", "image-volume", "image-volume-absent", "--grace-period", "2"); code != 0 {
			t.Errorf("delete: exit %d %s %s", code, o, e)
		}
		eventually(t, time.Minute, "the image volume pods gone from containerd", func() (bool, string) {
			left := 0
			for _, uid := range uids {
				sbs, cs := n.runtimeOf(uid)
				left += len(sbs) + len(cs)
			}
			return left == 0, fmt.Sprintf("%d sandboxes and containers left", left)
		})
	}()
	rec := n.waitRecord(p.Name, 2*time.Minute, "ignores running, uses failed by the pull", func(r *plannerv1.PodRecord) bool {
		w := cstatus(r, "uses").GetState().GetWaiting().GetReason()
		return cstatus(r, "ignores").GetState().GetRunning() != nil && (w == "ErrImagePull" || w == "ImagePullBackOff")
	})
	t.Logf("uses: %s", cstatus(rec, "uses").GetState().GetWaiting())
	if e := findEvent(rec, "Failed", ""); e == nil {
		t.Errorf("no Failed event: %v", rec.GetEvents())
	}
	var podPull, usesFailed bool
	for _, e := range rec.GetEvents() {
		switch {
		case e.GetReason() == "Failed" && e.GetInvolvedContainer() == "" && strings.Contains(e.GetMessage(), `Failed to pull image "`+absent+`"`):
			podPull = true
		case e.GetReason() == "Failed" && e.GetInvolvedContainer() == "uses" && e.GetMessage() == "Error: ErrImagePull":
			usesFailed = true
		case e.GetInvolvedContainer() == "ignores" && e.GetReason() == "Failed":
			t.Errorf("ignores failed: %v", e)
		}
	}
	if !podPull || !usesFailed {
		t.Errorf("events: the pod's failed pull %v, uses' Error: ErrImagePull %v:\n%v", podPull, usesFailed, rec.GetEvents())
	}

	if !mounts {
		rec = n.waitRecord("image-volume", time.Minute, "app in CreateContainerError", func(r *plannerv1.PodRecord) bool {
			return cstatus(r, "app").GetState().GetWaiting().GetReason() == "CreateContainerError"
		})
		if m := cstatus(rec, "app").GetState().GetWaiting().GetMessage(); !strings.Contains(m, `failed to mkdir ""`) {
			t.Errorf("app's message on a runtime without image mounts: %q", m)
		}
		return
	}
	n.waitRecord("image-volume", time.Minute, "Running", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING
	})
	var out string
	eventually(t, time.Minute, "the app's log", func() (bool, string) {
		_, out, _ = n.ctl("logs", "image-volume", "-c", "app")
		return strings.Contains(out, "read-only"), out
	})
	for _, want := range []string{"/tools/bin/busybox is the image's", "root:x:0:0:root:/root:/bin/sh", "/tools is read-only"} {
		if !strings.Contains(out, want) {
			t.Errorf("app's log lacks %q:\n%s", want, out)
		}
	}
}
