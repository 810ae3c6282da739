package ctl

import (
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// debug adds one ephemeral container to the stored pod and leaves
// the rest of its spec as it was.
func TestDebugAddsAnEphemeralContainer(t *testing.T) {
	h := newHarness(t)
	rec := record("web", nil, []*syncpodv1.ContainerStatus{running("app", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	rec.Pod.Uid = "u-web"
	rec.Pod.Spec = &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox:1.36"}}}
	h.planner.PutPod(rec)
	if code := h.run(t, "debug", "pod/web", "--image=busybox:1.37", "--target=app", "-c", "dbg", "--", "sh", "-c", "ps"); code != 0 {
		t.Fatalf("debug: exit %d err %q", code, h.err)
	}
	got := h.pod(t, "default/web")
	if got.GetUid() != "u-web" || len(got.GetSpec().GetContainers()) != 1 || got.GetSpec().GetContainers()[0].GetImage() != "busybox:1.36" {
		t.Errorf("pod changed beyond its ephemeral containers: %v", got)
	}
	ec := got.GetSpec().GetEphemeralContainers()
	if len(ec) != 1 || ec[0].GetName() != "dbg" || ec[0].GetImage() != "busybox:1.37" || ec[0].GetTargetContainerName() != "app" ||
		strings.Join(ec[0].GetCommand(), " ") != "sh -c ps" || ec[0].GetStdin() || ec[0].GetTty() {
		t.Fatalf("ephemeral containers %v", ec)
	}
	h.out.Reset()
	if code := h.run(t, "describe", "pod", "web"); code != 0 || !strings.Contains(h.out.String(), "Ephemeral Containers:\n  dbg:") ||
		!strings.Contains(h.out.String(), "Target Container Name:") {
		t.Errorf("describe: exit %d out %s", code, h.out)
	}
	// Without a name one is made up, unlike every other container's.
	if code := h.run(t, "debug", "web", "--image=busybox:1.37"); code != 0 || !strings.Contains(h.err.String(), "Defaulting debug container name to debugger-") {
		t.Fatalf("debug: exit %d err %q", code, h.err)
	}
	if ec := h.pod(t, "default/web").GetSpec().GetEphemeralContainers(); len(ec) != 2 || !strings.HasPrefix(ec[1].GetName(), "debugger-") {
		t.Fatalf("ephemeral containers %v", ec)
	}
	for _, bad := range [][]string{{"debug", "web"}, {"debug", "--image=x"}, {"debug", "web", "more", "--image=x"}} {
		if code := h.run(t, bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	if code := h.run(t, "debug", "nosuch", "--image=x"); code != 3 {
		t.Errorf("unknown pod: exit %d, want 3", code)
	}
}

func (h *harness) pod(t *testing.T, key string) *syncpodv1.Pod {
	t.Helper()
	r, ok := h.planner.Pod(key)
	if !ok {
		t.Fatalf("no pod %s", key)
	}
	return r.GetPod()
}
