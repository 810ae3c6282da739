package runner

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// usernsEnv is newEnv on rt, a runtime that may run user namespaces, with
// the store at path (so a test can open it again) and the node range r.
func usernsEnv(t *testing.T, rt *critest.Runtime, path string) *env {
	t.Helper()
	e := newEnv(t, busybox)
	e.rt = rt
	store, err := backoff.Open(path, backoff.Config{Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	e.store = store
	cm, err := runtimeclient.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	e.r, err = New(Config{
		Runtime: runtimeclient.NewRuntime(rt, cm, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(e.img, cm, runtimeclient.Timeouts{}),
		Backoff: store, Clock: e.clock, LogDir: e.logDir, PodDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func usernsPod(uid string, hostUsers *bool) *syncpodv1.Pod {
	p := testPod(nil, ctr("c"))
	p.Uid, p.Name = uid, "pod-"+uid
	p.Spec.HostNetwork = false
	p.Spec.HostUsers = hostUsers
	return p
}

// sandboxUserns is the user namespace the runtime created pod's sandbox
// with, and the one its container c was created with.
func sandboxUserns(t *testing.T, e *env, uid string) (sandbox, container *runtimeapi.UserNamespace) {
	t.Helper()
	o := e.observe(t, uid)
	if len(o.GetSandboxes()) != 1 || len(o.GetContainers()) != 1 {
		t.Fatalf("pod %s: %d sandboxes, %d containers", uid, len(o.GetSandboxes()), len(o.GetContainers()))
	}
	st, err := e.rt.PodSandboxStatus(context.Background(), o.GetSandboxes()[0].GetId(), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.rt.CreatedConfig(o.GetContainers()[0].GetId())
	return st.GetStatus().GetLinux().GetNamespaces().GetOptions().GetUsernsOptions(), cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
}

// TestUserNamespacesPerPod: a pod with host_users false runs, sandbox and
// containers, in a user namespace mapping its IDs 0..65535 to a range of
// its own, the lowest free one from 65536; every other pod in the
// node's (mode NODE, as the kubelet asks). Two pods never share a range,
// a restarted executor hands a pod the range it had and another pod a
// different one, and a deleted pod's range is free again.
func TestUserNamespacesPerPod(t *testing.T) {
	path := filepath.Join(t.TempDir(), "executor.db")
	rt := critest.NewRuntimeWithUserNamespaces()
	e := usernsEnv(t, rt, path)
	no := false

	runningPod(t, e, usernsPod("a", &no))
	runningPod(t, e, usernsPod("b", &no))
	runningPod(t, e, usernsPod("host", nil))
	for _, tc := range []struct {
		uid  string
		mode runtimeapi.NamespaceMode
		host uint32
	}{{"a", runtimeapi.NamespaceMode_POD, 65536}, {"b", runtimeapi.NamespaceMode_POD, 2 * 65536}, {"host", runtimeapi.NamespaceMode_NODE, 0}} {
		sb, c := sandboxUserns(t, e, tc.uid)
		for what, u := range map[string]*runtimeapi.UserNamespace{"sandbox": sb, "container": c} {
			if u.GetMode() != tc.mode {
				t.Errorf("pod %s %s: user namespace %v, want mode %v", tc.uid, what, u, tc.mode)
				continue
			}
			if tc.mode != runtimeapi.NamespaceMode_POD {
				continue
			}
			for _, m := range [][]*runtimeapi.IDMapping{u.GetUids(), u.GetGids()} {
				if len(m) != 1 || m[0].GetHostId() != tc.host || m[0].GetContainerId() != 0 || m[0].GetLength() != 65536 {
					t.Errorf("pod %s %s: mappings %v, want 0 -> %d for 65536 IDs", tc.uid, what, m, tc.host)
				}
			}
		}
		// every mount of a container in its own user namespace
		// carries the mappings (idmapped); the node's carry none.
		for _, c := range e.observe(t, tc.uid).GetContainers() {
			mounts := rt.CreatedConfig(c.GetId()).GetMounts()
			if len(mounts) == 0 {
				t.Fatalf("pod %s: container %s has no mounts to check", tc.uid, c.GetId())
			}
			for _, m := range mounts {
				idmapped := len(m.GetUidMappings()) == 1 && m.GetUidMappings()[0].GetHostId() == tc.host &&
					len(m.GetGidMappings()) == 1 && m.GetGidMappings()[0].GetHostId() == tc.host
				if tc.mode == runtimeapi.NamespaceMode_POD && !idmapped {
					t.Errorf("pod %s: mount %s carries %v / %v, want the pod's mappings from %d", tc.uid, m.GetContainerPath(), m.GetUidMappings(), m.GetGidMappings(), tc.host)
				}
				if tc.mode != runtimeapi.NamespaceMode_POD && (len(m.GetUidMappings()) != 0 || len(m.GetGidMappings()) != 0) {
					t.Errorf("pod %s on the node's user namespace: mount %s carries mappings", tc.uid, m.GetContainerPath())
				}
			}
		}
	}

	// The executor restarts: a's container restarts in its range, c gets
	// a new one.
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	e = usernsEnv(t, rt, path)
	o := e.observe(t, "a")
	resp := e.apply(t, usernsPod("a", &no), o, &syncpodv1.PodActions{ContainersToStart: []*syncpodv1.ContainerStart{{Name: "c", SpecHash: "hash-c2"}},
		SandboxId: o.GetSandboxes()[0].GetId()})
	if got := summary(resp); strings.Contains(got, "FAILED") {
		t.Fatalf("restart in a: %s", got)
	}
	for _, c := range e.observe(t, "a").GetContainers() {
		if u := rt.CreatedConfig(c.GetId()).GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); u.GetUids()[0].GetHostId() != 65536 {
			t.Errorf("a's container %s after a restart: %v, want its range from 65536", c.GetId(), u)
		}
	}
	runningPod(t, e, usernsPod("c", &no))
	if sb, _ := sandboxUserns(t, e, "c"); sb.GetUids()[0].GetHostId() != 3*65536 {
		t.Errorf("c after a restart: %v, want the next free range, from %d", sb, 3*65536)
	}

	// a is deleted and forgotten: its range goes to the next pod.
	ao := e.observe(t, "a")
	var ids []string
	for _, c := range ao.GetContainers() {
		e.rt.ExitContainer(c.GetId(), 0, "Completed", e.clock.Now().UnixNano())
		ids = append(ids, c.GetId())
	}
	e.rt.SetSandboxState(ao.GetSandboxes()[0].GetId(), runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
	if _, err := e.r.RemoveResources(context.Background(), ids, []string{ao.GetSandboxes()[0].GetId()},
		&executorv1.ForgetPodRef{Uid: "a", Namespace: "ns", Name: "pod-a"}); err != nil {
		t.Fatal(err)
	}
	runningPod(t, e, usernsPod("d", &no))
	if sb, _ := sandboxUserns(t, e, "d"); sb.GetUids()[0].GetHostId() != 65536 {
		t.Errorf("d after a was forgotten: %v, want a's range from 65536", sb)
	}
}

// TestUserNamespaceRefusedByTheRuntime: on a runtime whose handler does
// not run user namespaces (crisim), a pod with host_users false gets no
// sandbox, with the kubelet's event message, and holds no range.
func TestUserNamespaceRefusedByTheRuntime(t *testing.T) {
	e := newEnv(t, busybox)
	no := false
	pod := usernsPod("a", &no)
	resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("c")})
	steps := resp.GetSteps()
	if len(steps) == 0 || steps[0].GetStep() != executorv1.Step_STEP_CREATE_SANDBOX || steps[0].GetOutcome() != executorv1.Outcome_OUTCOME_FAILED ||
		steps[0].GetMessage() != "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces" {
		t.Fatalf("steps %s, first %v", summary(resp), steps)
	}
	if n := len(e.rt.GetCalls()); n > 0 {
		for _, c := range e.rt.GetCalls() {
			if c == "RunPodSandbox" {
				t.Error("RunPodSandbox was called")
			}
		}
	}
	if held, err := e.store.UserNamespaces(); err != nil || len(held) != 0 {
		t.Errorf("ranges held: %v, %v", held, err)
	}
}

// TestOrphanedUserNamespacesReleased: a range held by a pod the runtime
// lists no sandbox of is freed, as the kubelet's housekeeping frees the
// ranges of pods nobody knows: at the executor's start, a range
// taken just before a crash (before RunPodSandbox) and one of a pod whose
// sandbox went while the executor was down; while it runs, a range whose
// last sandbox the executor removes. A pod with a sandbox keeps its range
// whatever the sandbox's state, and so does a pod whose pass, holding its
// lock, is creating the sandbox.
func TestOrphanedUserNamespacesReleased(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "executor.db")
	rt := critest.NewRuntimeWithUserNamespaces()
	e := usernsEnv(t, rt, path)
	no := false
	const slot = 65536

	runningPod(t, e, usernsPod("running", &no)) // from 65536
	if got, err := e.store.AllocateUserNamespace("crashed", slot, slot, 100); err != nil || got != 2*slot {
		t.Fatalf("crashed: %d, %v", got, err)
	}
	stopped := runningPod(t, e, usernsPod("stopped", &no)).GetSandboxes()[0].GetId() // from 3*65536
	rt.SetSandboxState(stopped, runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
	gone := runningPod(t, e, usernsPod("gone", &no)).GetSandboxes()[0].GetId() // from 4*65536
	// Removed behind the executor's back, as while it was down.
	if err := rt.RemovePodSandbox(ctx, gone); err != nil {
		t.Fatal(err)
	}

	// The executor restarts and sweeps.
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	e = usernsEnv(t, rt, path)
	freed, err := e.r.ReleaseOrphanedUserNamespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(freed, []string{"crashed", "gone"}) {
		t.Errorf("freed %v, want [crashed gone]", freed)
	}
	held, err := e.store.UserNamespaces()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]uint32{"running": slot, "stopped": 3 * slot}; !maps.Equal(held, want) {
		t.Errorf("held after the sweep %v, want %v", held, want)
	}
	runningPod(t, e, usernsPod("next", &no))
	if sb, _ := sandboxUserns(t, e, "next"); sb.GetUids()[0].GetHostId() != 2*slot {
		t.Errorf("next: %v, want the lowest freed range, from %d", sb, 2*slot)
	}

	// The executor removes stopped's last sandbox: its range is free at
	// once (no forget: the planner may still want the pod, which then
	// takes a range again with its next sandbox).
	resp, err := e.r.RemoveResources(ctx, nil, []string{stopped}, nil)
	if err != nil || resp.GetResults()[0].GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
		t.Fatalf("remove stopped's sandbox: %v, %v", resp, err)
	}
	if held, _ := e.store.UserNamespaces(); held["stopped"] != 0 {
		t.Errorf("stopped still holds %d after its last sandbox was removed", held["stopped"])
	}

	// A pass that has taken a range holds the pod's lock until its
	// sandbox exists: the sweep waits for it and keeps the range.
	if _, err := e.store.AllocateUserNamespace("creating", slot, slot, 100); err != nil {
		t.Fatal(err)
	}
	unlock, err := e.r.lockPod(ctx, "creating")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		freed []string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		f, err := e.r.ReleaseOrphanedUserNamespaces(ctx)
		done <- result{f, err}
	}()
	if _, err := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-creating", Namespace: "ns", Uid: "creating"},
		Labels:   map[string]string{crilabels.PodUID: "creating"},
	}, ""); err != nil {
		t.Fatal(err)
	}
	unlock()
	if res := <-done; res.err != nil || len(res.freed) != 0 {
		t.Errorf("sweep beside a pass creating the sandbox freed %v, %v; want nothing", res.freed, res.err)
	}
	if held, _ := e.store.UserNamespaces(); held["creating"] == 0 {
		t.Errorf("creating lost its range: %v", held)
	}
}
