package observe_test

import (
	"context"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/cri/observe"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestReadPodBack: Read returns only the pod's objects, newest first, with
// the identity, spec hash and restart count the executor wrote, a
// container's sandbox id from the listing, and the given observation time.
func TestReadPodBack(t *testing.T) {
	rt := critest.NewRuntime()
	rt.AddPodSandbox("u1", "sb-old", 0, 10)
	rt.AddPodSandbox("u1", "sb-new", 1, 20)
	rt.AddPodContainer("sb-new", "c-new", "app", "h2", 3, 30)
	rt.AddPodContainer("sb-old", "c-old", "app", "h1", 2, 15)
	rt.ExitContainer("c-old", 1, "Error", 16)
	rt.AddPodSandbox("u2", "other", 0, 5)

	at := time.Unix(100, 0)
	p, err := observe.Read(t.Context(), rt, "u1", at)
	if err != nil {
		t.Fatal(err)
	}
	if p.GetUid() != "u1" || p.GetName() != "pod-u1" || p.GetNamespace() != "default" || !p.GetObservedAt().AsTime().Equal(at) {
		t.Errorf("identity %v", p)
	}
	if len(p.GetSandboxes()) != 2 || p.GetSandboxes()[0].GetId() != "sb-new" || !p.GetSandboxes()[0].GetHostNetwork() {
		t.Errorf("sandboxes %v, want sb-new first, host network", p.GetSandboxes())
	}
	cs := p.GetContainers()
	if len(cs) != 2 || cs[0].GetId() != "c-new" || cs[0].GetSandboxId() != "sb-new" || cs[0].GetSpecHash() != "h2" || cs[0].GetRestartCount() != 3 {
		t.Fatalf("containers %v", cs)
	}
	if cs[1].GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED || cs[1].GetExitCode() != 1 || cs[1].GetReason() != "Error" {
		t.Errorf("exited container %v", cs[1])
	}
}

// TestReadSkipsVanished: an object listed but gone by its status call is
// left out, not an error.
func TestReadSkipsVanished(t *testing.T) {
	rt := critest.NewRuntime()
	rt.AddPodSandbox("u1", "sb", 0, 10)
	rt.AddPodContainer("sb", "c1", "app", "h", 0, 11)
	rt.AddPodContainer("sb", "c2", "side", "h", 0, 12)
	rt.SetInspectHook(func(_ context.Context, id string) error {
		if id == "c2" {
			rt.Remove("c2")
		}
		return nil
	})
	p, err := observe.Read(t.Context(), rt, "u1", time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GetContainers()) != 1 || p.GetContainers()[0].GetId() != "c1" {
		t.Errorf("containers %v, want c1 only", p.GetContainers())
	}
	if rt.Calls("ContainerStatus") != 2 {
		t.Errorf("ContainerStatus calls %d, want 2", rt.Calls("ContainerStatus"))
	}
}
