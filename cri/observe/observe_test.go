package observe

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/crilabels"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func sandbox(id string, created int64, hostNet bool, ip string) *runtimeapi.PodSandboxStatus {
	mode := runtimeapi.NamespaceMode_POD
	if hostNet {
		mode = runtimeapi.NamespaceMode_NODE
	}
	return &runtimeapi.PodSandboxStatus{
		Id: id, CreatedAt: created, State: runtimeapi.PodSandboxState_SANDBOX_READY,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "u1", Attempt: uint32(created)},
		Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux:    &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: mode}}},
		Labels:   map[string]string{crilabels.PodUID: "u1"},
	}
}

func container(id string, created int64, st runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id: id, CreatedAt: created, State: st, ExitCode: 1, Reason: "Error", FinishedAt: created + 5,
		Metadata:    &runtimeapi.ContainerMetadata{Name: "meta-name"},
		Labels:      map[string]string{crilabels.ContainerName: "app", crilabels.SpecHash: "h1"},
		Annotations: map[string]string{crilabels.RestartCount: "7"},
		ImageRef:    "sha256:abc",
	}
}

func TestPodConversionAndOrder(t *testing.T) {
	at := time.Unix(100, 0)
	p := Pod("u1", Inspected{
		Sandboxes:  []*runtimeapi.PodSandboxStatus{sandbox("old", 1, false, "10.0.0.1"), sandbox("new", 2, true, "")},
		Containers: []*runtimeapi.ContainerStatus{container("c-old", 10, runtimeapi.ContainerState_CONTAINER_EXITED), container("c-new", 20, runtimeapi.ContainerState_CONTAINER_CREATED)},
		SandboxOf:  map[string]string{"c-old": "old", "c-new": "new"},
	}, at)
	if p.GetSandboxes()[0].GetId() != "new" || !p.GetSandboxes()[0].GetHostNetwork() || p.GetSandboxes()[1].GetIp() != "10.0.0.1" || p.GetSandboxes()[1].GetHostNetwork() {
		t.Errorf("sandboxes (want newest first, host_network from NamespaceOptions): %v", p.GetSandboxes())
	}
	c := p.GetContainers()[0]
	if c.GetId() != "c-new" || c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_CREATED || c.GetName() != "app" ||
		c.GetSpecHash() != "h1" || c.GetRestartCount() != 7 || c.GetImage() != "sha256:abc" || c.GetSandboxId() != "new" || c.GetStartedAt() != nil {
		t.Errorf("newest container %v", c)
	}
	old := p.GetContainers()[1]
	if old.GetExitCode() != 1 || old.GetFinishedAt().AsTime().UnixNano() != 15 || old.GetReason() != "Error" {
		t.Errorf("old container %v", old)
	}
	if p.GetName() != "web" || p.GetNamespace() != "ns" || !p.GetObservedAt().AsTime().Equal(at) {
		t.Errorf("identity %v", p)
	}
}

func TestGroup(t *testing.T) {
	sbs := []*runtimeapi.PodSandbox{
		{Id: "s1", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: map[string]string{crilabels.PodUID: "a"}},
		{Id: "s2", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "b"}},
		{Id: "s3"},
	}
	cs := []*runtimeapi.Container{
		{Id: "c1", PodSandboxId: "s1", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_CREATED, Labels: map[string]string{crilabels.PodUID: "b"}},
	}
	g := Group(sbs, cs)
	if len(g) != 2 || len(g["a"].Containers) != 1 || len(g["b"].Containers) != 1 {
		t.Fatalf("group %v", g)
	}
	if s, c := g["a"].Running(); s != 1 || c != 1 {
		t.Errorf("running a: %d %d", s, c)
	}
}

// TestGroupKeepsOrderAndSeparatesPods: every pod's objects in list order,
// pods known only from their containers included, no object in two pods,
// and appending to one pod's slices (they share backing arrays) leaves
// the others as they were.
func TestGroupKeepsOrderAndSeparatesPods(t *testing.T) {
	var sbs []*runtimeapi.PodSandbox
	var cs []*runtimeapi.Container
	want := map[string][]string{}
	for i := range 30 {
		uid := fmt.Sprintf("u%d", i%7)
		if i%3 == 0 {
			id := fmt.Sprintf("s%d", i)
			sbs = append(sbs, &runtimeapi.PodSandbox{Id: id, Labels: map[string]string{crilabels.PodUID: uid}})
			want[uid] = append(want[uid], id)
		}
		id := fmt.Sprintf("c%d", i)
		cs = append(cs, &runtimeapi.Container{Id: id, Labels: map[string]string{crilabels.PodUID: uid}})
		want[uid] = append(want[uid], id)
	}
	cs = append(cs, &runtimeapi.Container{Id: "orphan"}) // no uid, no known sandbox: skipped
	g := Group(sbs, cs)
	ids := func(l *Listing) []string {
		var out []string
		for _, s := range l.Sandboxes {
			out = append(out, s.GetId())
		}
		for _, c := range l.Containers {
			out = append(out, c.GetId())
		}
		return out
	}
	if len(g) != len(want) {
		t.Fatalf("%d pods, want %d", len(g), len(want))
	}
	for uid, w := range want {
		// want lists sandboxes and containers interleaved by i; a
		// listing has its sandboxes first, each kind in list order.
		var ws, wc []string
		for _, id := range w {
			if id[0] == 's' {
				ws = append(ws, id)
			} else {
				wc = append(wc, id)
			}
		}
		if got := ids(g[uid]); !slices.Equal(got, append(ws, wc...)) {
			t.Errorf("%s: %v, want %v", uid, got, append(ws, wc...))
		}
	}
	before := ids(g["u1"])
	g["u0"].Sandboxes = append(g["u0"].Sandboxes, &runtimeapi.PodSandbox{Id: "x"})
	g["u0"].Containers = append(g["u0"].Containers, &runtimeapi.Container{Id: "y"})
	for uid := range want {
		if uid != "u0" && (slices.Contains(ids(g[uid]), "x") || slices.Contains(ids(g[uid]), "y")) {
			t.Errorf("%s changed by an append to u0: %v", uid, ids(g[uid]))
		}
	}
	if !slices.Equal(before, ids(g["u1"])) {
		t.Errorf("u1 changed: %v, was %v", ids(g["u1"]), before)
	}
}
