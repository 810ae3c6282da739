package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/userns"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestContainerdUserNamespacePerPod: on a containerd whose handler runs
// user namespaces (2.x with runc 1.2 or later, on a kernel with idmapped
// overlay mounts; the pods need a pod network, so the containerd needs a
// CNI network that gives them an interface), two
// pods with host_users false each see their own mapping in
// /proc/self/uid_map and gid_map: IDs 0..65535 to distinct 65536-ID
// ranges of the node's. On one that does not (1.6, or Debian's
// runc 1.1), the sandbox fails with the kubelet's message and nothing is
// created.
func TestContainerdUserNamespacePerPod(t *testing.T) {
	x := newReal(t, backoff.Config{})
	st, err := x.cd.Runtime.Status(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	supported := userns.HandlerSupports(st, "") == nil
	no := false
	pod := func() *syncpodv1.Pod {
		p := realPod(t, x, nil, sh("ids", x.cd.Busybox, "cat /proc/self/uid_map /proc/self/gid_map"))
		p.Spec.HostNetwork = false // a user namespace needs the pod's own network namespace
		p.Spec.HostUsers = &no
		return p
	}
	if !supported {
		p := pod()
		resp := x.apply(t, p, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("ids")})
		s := resp.GetSteps()
		if len(s) == 0 || s[0].GetStep() != executorv1.Step_STEP_CREATE_SANDBOX || s[0].GetOutcome() != executorv1.Outcome_OUTCOME_FAILED ||
			!strings.Contains(s[0].GetMessage(), "can't set `spec.hostUsers: false`, runtime does not support user namespaces") {
			t.Fatalf("runtime without user namespaces: steps %v", s)
		}
		if o := x.observe(t, p.GetUid()); len(o.GetSandboxes()) != 0 {
			t.Errorf("sandboxes made: %v", o.GetSandboxes())
		}
		t.Logf("the runtime's handler does not run user namespaces: refused as the kubelet refuses (%s)", s[0].GetMessage())
		return
	}
	seen := map[string]string{}
	for _, p := range []*syncpodv1.Pod{pod(), pod()} {
		c := runToExit(t, x, p, "ids")
		if c.GetExitCode() != 0 {
			t.Fatalf("pod %s: exit %d", p.GetUid(), c.GetExitCode())
		}
		lines := containerLog(t, x, c.GetId())
		if len(lines) != 2 {
			t.Fatalf("pod %s: uid_map and gid_map %q", p.GetUid(), lines)
		}
		f := strings.Fields(lines[0])
		if len(f) != 3 || f[0] != "0" || f[2] != fmt.Sprint(userns.IDsPerPod) || strings.Join(strings.Fields(lines[1]), " ") != strings.Join(f, " ") {
			t.Fatalf("pod %s: uid_map %q, gid_map %q; want one line 0 HOST 65536, the same for groups", p.GetUid(), lines[0], lines[1])
		}
		if other, dup := seen[f[1]]; dup {
			t.Errorf("pods %s and %s share the host IDs from %s", other, p.GetUid(), f[1])
		}
		seen[f[1]] = p.GetUid()
		t.Logf("pod %s: uid_map %q", p.GetUid(), strings.Join(f, " "))
	}
}

// TestContainerdUserNamespacePodUsesItsEmptyDir: a pod in its own user
// namespace writes and reads its emptyDir volume as its root, user 0
// inside. Needs what TestContainerdUserNamespacePerPod needs.
func TestContainerdUserNamespacePodUsesItsEmptyDir(t *testing.T) {
	x := newReal(t, backoff.Config{})
	st, err := x.cd.Runtime.Status(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := userns.HandlerSupports(st, ""); err != nil {
		t.Skipf("SKIPPING: the runtime's handler does not run user namespaces (%v); TestContainerdUserNamespacePerPod checks the refusal", err)
	}
	withVolumes(t, x)
	c := sh("ids", x.cd.Busybox, "echo written > /data/f && cat /data/f && stat -c '%u %g' /data/f && id -u")
	c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p := realPod(t, x, nil, c)
	p.Spec.HostNetwork = false
	no := false
	p.Spec.HostUsers = &no
	p.Spec.Volumes = []*syncpodv1.Volume{{Name: "data", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}}
	t.Cleanup(func() {
		if err := x.r.RemoveVolumes(context.Background(), p.GetUid()); err != nil {
			t.Errorf("RemoveVolumes: %v", err)
		}
	})
	got := runToExit(t, x, p, "ids")
	lines := containerLog(t, x, got.GetId())
	if got.GetExitCode() != 0 || strings.Join(lines, "|") != "written|0 0|0" {
		t.Fatalf("exit %d, log %q; want the file written and read, owned by the pod's root", got.GetExitCode(), lines)
	}
}
