package runner_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/userns"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// usernsIDsPod is a pod in its own user namespace (host_users false, so
// on a network of its own) on runtime handler handler, whose container
// ids prints its uid_map and gid_map and exits.
func usernsIDsPod(t *testing.T, x *real, handler string) *syncpodv1.Pod {
	p := realPod(t, x, nil, sh("ids", x.cd.Busybox, "cat /proc/self/uid_map /proc/self/gid_map"))
	p.Spec.HostNetwork = false // a user namespace needs the pod's own network namespace
	no := false
	p.Spec.HostUsers = &no
	p.Spec.RuntimeClassName = handler
	return p
}

// checkIDMaps reads the log of container c of pod uid, its uid_map and
// gid_map: one line each, "0 <base> 65536", where base is the first host
// ID the executor's store holds for the pod.
func checkIDMaps(t *testing.T, x *real, uid string, c *syncpodv1.ObservedContainer) uint32 {
	t.Helper()
	if c.GetExitCode() != 0 {
		t.Fatalf("pod %s: container %s exited %d", uid, c.GetId(), c.GetExitCode())
	}
	held, err := x.store.UserNamespaces()
	if err != nil {
		t.Fatal(err)
	}
	base, ok := held[uid]
	if !ok {
		t.Fatalf("pod %s holds no range in the store (%v)", uid, held)
	}
	// The runtime may report the exit before its log copy has written
	// the last lines out: the log is waited for, a few seconds at most.
	lines := containerLog(t, x, c.GetId())
	for deadline := time.Now().Add(10 * time.Second); len(lines) < 2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		lines = containerLog(t, x, c.GetId())
	}
	want := fmt.Sprintf("0 %d %d", base, userns.IDsPerPod)
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != want || strings.Join(strings.Fields(lines[1]), " ") != want {
		t.Fatalf("pod %s: uid_map and gid_map %q; want %q for both, the range the store holds", uid, lines, want)
	}
	t.Logf("pod %s: uid_map and gid_map %q", uid, want)
	return base
}

// TestContainerdUserNamespacePerPod: on a containerd whose handler runs
// user namespaces (2.x with runc 1.2 or later, on a kernel with idmapped
// overlay mounts: `make test`'s 2.x instance has the handler runc-userns,
// named by SYNCPOD_TEST_CONTAINERD_USERNS_HANDLER), two pods with
// host_users false see their own mappings in /proc/self/uid_map and
// gid_map: IDs 0..65535 to the distinct 65536-ID ranges the executor's
// store allocated them. The executor restarts, sweeping the
// ranges of pods without sandboxes as at its start: both pods keep theirs,
// a container restarted in one runs with the same mapping, and a third
// pod gets a range of its own. On a handler that does not run them (the
// default one of 1.6 and of 2.x: Debian's runc 1.1), the sandbox fails
// with the kubelet's message and nothing is created.
func TestContainerdUserNamespacePerPod(t *testing.T) {
	// A back-off of a millisecond: the container restarted after the
	// executor's restart does not wait out the 10 s a success gets.
	x := newReal(t, backoff.Config{Initial: time.Millisecond, Max: backoff.MinMax})
	ctx := context.Background()
	st, err := x.cd.Runtime.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	handler, supported := containerdtest.UserNamespaceHandler(t, st)
	if err := userns.HandlerSupports(st, ""); err != nil {
		p := usernsIDsPod(t, x, "")
		resp := x.apply(t, p, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("ids")})
		s := resp.GetSteps()
		if len(s) == 0 || s[0].GetStep() != executorv1.Step_STEP_CREATE_SANDBOX || s[0].GetOutcome() != executorv1.Outcome_OUTCOME_FAILED ||
			!strings.Contains(s[0].GetMessage(), "can't set `spec.hostUsers: false`, runtime does not support user namespaces") {
			t.Fatalf("default handler without user namespaces: steps %v", s)
		}
		if o := x.observe(t, p.GetUid()); len(o.GetSandboxes()) != 0 {
			t.Errorf("sandboxes made: %v", o.GetSandboxes())
		}
		if held, err := x.store.UserNamespaces(); err != nil || len(held) != 0 {
			t.Errorf("ranges held after the refusal: %v, %v", held, err)
		}
		t.Logf("the default handler does not run user namespaces: refused as the kubelet refuses (%s)", s[0].GetMessage())
	} else if !supported {
		handler, supported = "", true
	}
	if !supported {
		t.Logf("no handler that runs user namespaces (%s unset): the refusal only", containerdtest.EnvUsernsHandler)
		return
	}

	a, b := usernsIDsPod(t, x, handler), usernsIDsPod(t, x, handler)
	baseA := checkIDMaps(t, x, a.GetUid(), runToExit(t, x, a, "ids"))
	baseB := checkIDMaps(t, x, b.GetUid(), runToExit(t, x, b, "ids"))
	if baseA == baseB {
		t.Fatalf("pods %s and %s share the host IDs from %d", a.GetUid(), b.GetUid(), baseA)
	}

	// The executor restarts and sweeps as at its start: both pods have
	// sandboxes, so both keep their ranges.
	if err := x.store.Close(); err != nil {
		t.Fatal(err)
	}
	x.open(t)
	freed, err := x.r.ReleaseOrphanedUserNamespaces(ctx)
	if err != nil || slices.Contains(freed, a.GetUid()) || slices.Contains(freed, b.GetUid()) {
		t.Fatalf("the sweep at start freed %v, %v", freed, err)
	}
	first := newest(x.observe(t, a.GetUid()), "ids").GetId()
	sb := x.observe(t, a.GetUid()).GetSandboxes()[0].GetId()
	mustSucceed(t, x.apply(t, a, &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: start("ids")}))
	restarted := x.waitFor(t, a.GetUid(), "the restarted container to exit", func(o *syncpodv1.ObservedPod) bool {
		for _, c := range o.GetContainers() {
			if c.GetId() != first && c.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
				return true
			}
		}
		return false
	})
	for _, c := range restarted.GetContainers() {
		if c.GetId() != first {
			if got := checkIDMaps(t, x, a.GetUid(), c); got != baseA {
				t.Errorf("pod %s after the restart: range from %d, want %d as before", a.GetUid(), got, baseA)
			}
		}
	}
	c := usernsIDsPod(t, x, handler)
	baseC := checkIDMaps(t, x, c.GetUid(), runToExit(t, x, c, "ids"))
	if baseC == baseA || baseC == baseB {
		t.Errorf("pod %s after the restart got the range from %d, held by another pod (%d, %d)", c.GetUid(), baseC, baseA, baseB)
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
	handler, ok := containerdtest.UserNamespaceHandler(t, st)
	if !ok {
		if err := userns.HandlerSupports(st, ""); err != nil {
			t.Skipf("SKIPPING: no handler of this runtime runs user namespaces (%v; %s unset); TestContainerdUserNamespacePerPod checks the refusal",
				err, containerdtest.EnvUsernsHandler)
		}
	}
	withVolumes(t, x)
	c := sh("ids", x.cd.Busybox, "echo written > /data/f && cat /data/f && stat -c '%u %g' /data/f && id -u && stat -c '%u %g' /data")
	c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p := realPod(t, x, nil, c)
	p.Spec.HostNetwork = false
	no := false
	p.Spec.HostUsers = &no
	p.Spec.RuntimeClassName = handler
	p.Spec.Volumes = []*syncpodv1.Volume{{Name: "data", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}}
	t.Cleanup(func() {
		if err := x.r.RemoveVolumes(context.Background(), p.GetUid()); err != nil {
			t.Errorf("RemoveVolumes: %v", err)
		}
	})
	got := runToExit(t, x, p, "ids")
	lines := containerLog(t, x, got.GetId())
	// The directory the node made (host root's) is root's in the pod too:
	// the mount is idmapped, not the overflow user's 65534.
	if got.GetExitCode() != 0 || strings.Join(lines, "|") != "written|0 0|0|0 0" {
		t.Fatalf("exit %d, log %q; want the file written and read, owned by the pod's root, in a directory of the pod's root", got.GetExitCode(), lines)
	}
}
