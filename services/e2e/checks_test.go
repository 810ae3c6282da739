package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The suite's checks must be able to fail: a second host process of a
// container is a DUPLICATE, a sandbox no desired pod owns is an ORPHAN
// (each counted once), and a tracked process is alive until it is gone.
func TestConvergedCheckSeesDuplicatesAndOrphans(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	want := map[string]int{"checked": 3}
	n.apply(revPod("checked", 1, 3))
	eventually(t, converge, "the pod running", func() (bool, string) {
		last := n.converged(want, 1, true, nil)
		return last == "", last
	})

	// A second process of checked/c0, as a runtime that lost track of
	// its container would leave.
	stray := exec.Command("sleep", "600")
	stray.Dir = n.workDir
	stray.Env = append(os.Environ(), "POD=checked", "CTR=c0", "REV=3")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stray.Process.Kill(); _ = stray.Wait() }()
	h, ok := readHostProc(stray.Process.Pid)
	if !ok || !h.alive() {
		t.Fatalf("the stray process %d is not seen alive", stray.Process.Pid)
	}
	if got := n.look(want, 1, true, nil); !strings.Contains(got.String(), "DUPLICATE: 2 host processes of checked/c0") || got.duplicates != 1 {
		t.Errorf("a second process of checked/c0 is not reported as one duplicate: %d, %q", got.duplicates, got)
	}
	_ = stray.Process.Kill()
	_ = stray.Wait()
	if h.alive() {
		t.Errorf("process %d reported alive after it was killed and reaped", h.pid)
	}

	// A sandbox behind the planner's back.
	ctx := rpcCtx(t)
	id, err := n.cri.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "stranger", Namespace: "default", Uid: "stranger-uid"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.cri.RemovePodSandbox(ctx, id) }()
	if got := n.look(want, 1, true, nil); !strings.Contains(got.String(), "ORPHAN: 1 sandboxes of uid stranger-uid") || got.orphans != 1 {
		t.Errorf("a sandbox of no desired pod is not reported as one orphan: %d, %q", got.orphans, got)
	}
}
