package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/userns"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestUserNamespacesOnContainerd runs pods with hostUsers false through a
// whole node on containerd. Where a runtime handler runs user namespaces
// (`make test`'s containerd 2.4, handler runc-userns: runc 1.5 with
// idmapped mounts), two pods each see "0 <base> 65536" in their
// containers' uid_map and gid_map, base the first host ID the executor's
// store allocated the pod, the two distinct. The executor is
// killed: its store holds both ranges, and a third is taken as by a pass
// that died before its RunPodSandbox. Started again, its sweep frees that
// one and leaves the pods' (they have sandboxes), a container of one
// stopped behind the node's back is restarted by the new executor with the
// same mapping, and a pod made after the restart gets the freed range.
// Where no handler runs them (Debian's containerd 1.6), the pod's sandbox
// fails with the kubelet's event and no sandbox is made.
func TestUserNamespacesOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t)
	n := startNode(t, nodeOptions{criEndpoint: endpoint, sockets: true})
	st, err := n.cri.Status(rpcCtx(t), false)
	if err != nil {
		t.Fatal(err)
	}
	handler, ok := containerdtest.UserNamespaceHandler(t, st)
	if !ok && userns.HandlerSupports(st, "") == nil {
		handler, ok = "", true // a default handler that runs them
	}
	no := false
	usernsPod := func(name, script string) *syncpodv1.Pod {
		c := &syncpodv1.Container{Name: "ids", Image: containerdtest.BusyboxImage(), Command: []string{"sh", "-c", script},
			ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
		p := pod(name, c)
		p.Spec.HostUsers = &no
		p.Spec.RuntimeClassName = handler
		return p
	}
	var made []*syncpodv1.Pod
	t.Cleanup(func() { // before the node's shutdown: an external runtime's pods are the test's to remove
		for _, p := range made {
			_, _, _ = n.ctl("delete", "pod", p.GetName(), "--grace-period", "1")
		}
		eventually(t, time.Minute, "the pods gone from the planner and from containerd", func() (bool, string) {
			left := 0
			for _, p := range made {
				sbs, cs := n.runtimeOf(p.GetUid())
				left += len(sbs) + len(cs)
			}
			return len(n.podNames()) == 0 && left == 0, fmt.Sprintf("pods %v, %d sandboxes and containers left", n.podNames(), left)
		})
	})
	apply := func(p *syncpodv1.Pod) *syncpodv1.Pod {
		stored := n.apply(p)
		made = append(made, stored)
		return stored
	}

	if !ok {
		p := apply(usernsPod("userns-refused", "true"))
		rec := n.waitRecord(p.GetName(), time.Minute, "the sandbox refused", func(r *plannerv1.PodRecord) bool {
			return findEvent(r, "FailedCreatePodSandBox", "") != nil
		})
		want := "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if e := findEvent(rec, "FailedCreatePodSandBox", ""); e.GetMessage() != want {
			t.Errorf("FailedCreatePodSandBox %q, want %q", e.GetMessage(), want)
		}
		if sbs, _ := n.runtimeOf(p.GetUid()); len(sbs) != 0 {
			t.Errorf("%d sandboxes made for a refused pod", len(sbs))
		}
		t.Logf("no handler of this runtime runs user namespaces (%s unset): the refusal only", containerdtest.EnvUsernsHandler)
		return
	}

	// mapped waits for the current container of pod name to have logged
	// its uid_map and gid_map, and returns the host base of the mapping,
	// checked to be "0 <base> 65536" for both.
	mapped := func(name string, restarts int32) uint32 {
		t.Helper()
		var base uint32
		eventually(t, time.Minute, name+"'s container mapping logged", func() (bool, string) {
			r, err := n.get(name)
			if err != nil || cstatus(r, "ids").GetRestartCount() < restarts || cstatus(r, "ids").GetState().GetRunning() == nil {
				return false, summary(r)
			}
			code, out, errOut := n.ctl("logs", name, "-c", "ids")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != 0 || len(lines) != 2 {
				return false, fmt.Sprintf("logs exit %d: %q %s", code, out, errOut)
			}
			uid, gid := strings.Fields(lines[0]), strings.Join(strings.Fields(lines[1]), " ")
			if len(uid) != 3 || uid[0] != "0" || uid[2] != fmt.Sprint(userns.IDsPerPod) || gid != strings.Join(uid, " ") {
				t.Fatalf("pod %s: uid_map and gid_map %q; want \"0 <base> %d\" for both", name, lines, userns.IDsPerPod)
			}
			_, err = fmt.Sscan(uid[1], &base)
			return err == nil, uid[1]
		})
		return base
	}
	const mapsThenWaits = "cat /proc/self/uid_map /proc/self/gid_map; trap 'exit 0' TERM; while true; do sleep 0.2; done"
	a, b := apply(usernsPod("userns-a", mapsThenWaits)), apply(usernsPod("userns-b", mapsThenWaits))
	baseA, baseB := mapped("userns-a", 0), mapped("userns-b", 0)
	if baseA == baseB {
		t.Fatalf("userns-a and userns-b share the host IDs from %d", baseA)
	}

	// The executor dies; its store holds the two ranges the pods run with.
	// A third range is taken as by a pass that died before its
	// RunPodSandbox: the restarted executor's sweep frees it.
	n.kill(n.executor)
	const ghost = "ghost-died-before-its-sandbox"
	var baseGhost uint32
	withExecutorStore(t, n, func(s *backoff.Store) {
		held, err := s.UserNamespaces()
		if err != nil {
			t.Fatal(err)
		}
		if len(held) != 2 || held[a.GetUid()] != baseA || held[b.GetUid()] != baseB {
			t.Fatalf("the store holds %v; want userns-a (%s) from %d and userns-b (%s) from %d", held, a.GetUid(), baseA, b.GetUid(), baseB)
		}
		r, err := userns.NodeRange()
		if err != nil {
			t.Fatal(err)
		}
		if baseGhost, err = s.AllocateUserNamespace(ghost, r.First, userns.IDsPerPod, r.Slots()); err != nil {
			t.Fatal(err)
		}
	})
	n.executor = n.restart(n.executor)
	eventually(t, time.Minute, "the restarted executor's sweep to free "+ghost, func() (bool, string) {
		for _, line := range strings.Split(n.executor.output(), "\n") {
			if strings.Contains(line, "user namespace of a pod without sandboxes released") && strings.Contains(line, ghost) {
				return true, ""
			}
		}
		return false, n.executor.tail(5)
	})

	// A's container, stopped behind the node's back, is restarted by the
	// new executor in the range A holds.
	_, cs := n.runtimeOf(a.GetUid())
	if len(cs) != 1 {
		t.Fatalf("userns-a has %d containers in containerd, want 1", len(cs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.cri.StopContainer(ctx, cs[0].GetId(), 0); err != nil {
		t.Fatal(err)
	}
	if got := mapped("userns-a", 1); got != baseA {
		t.Errorf("userns-a restarted after the executor's restart maps from %d, want %d as before", got, baseA)
	}
	apply(usernsPod("userns-c", mapsThenWaits))
	if baseC := mapped("userns-c", 0); baseC != baseGhost {
		t.Errorf("userns-c, made after the executor's restart, maps from %d; want %d, the lowest free range, freed by the sweep (a: %d, b: %d)",
			baseC, baseGhost, baseA, baseB)
	}
	t.Logf("userns-a from %d, userns-b from %d, kept across the executor's restart; the range from %d freed at its start and given to userns-c",
		baseA, baseB, baseGhost)
}

// withExecutorStore opens the store of the node's executor, which must
// not be running (it holds the file's lock), for fn, and closes it.
func withExecutorStore(t *testing.T, n *node, fn func(*backoff.Store)) {
	t.Helper()
	dir := ""
	for _, a := range n.executor.opts.args {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			dir = v
		}
	}
	if dir == "" {
		t.Fatalf("the executor has no --data-dir in %v", n.executor.opts.args)
	}
	s, err := backoff.Open(filepath.Join(dir, "executor.db"), backoff.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fn(s)
}
