package observe

import (
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
