package listcodec_test

import (
	"context"
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/cri/listcodec"
)

// Through a real CRI client and server (crisim over its socket, both in
// this process): crisim sends the kept encoding of each item it listed
// before, the client hands back the message it decoded before, and a
// container that changed state is a new item, encoded and decoded anew.
func TestCrisimAndTheCRIClientListThroughTheCaches_R13_2(t *testing.T) {
	ep, _ := crisimtest.Start(t, crisim.Options{Mode: crisim.ModeSimulated})
	rs, is := crisimtest.Clients(t, ep)
	ctx := context.Background()
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for p := range 3 {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprint("p", p), Namespace: "default", Uid: fmt.Sprint("u", p)},
			Labels: map[string]string{"listcodec-test": "yes", "pod": fmt.Sprint(p)}}
		sb, err := rs.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image: &runtimeapi.ImageSpec{Image: "img"}, Labels: map[string]string{"listcodec-test": "yes", "a": "1", "b": "2"}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	sel := map[string]string{"listcodec-test": "yes"}
	list := func() ([]*runtimeapi.Container, []*runtimeapi.PodSandbox) {
		t.Helper()
		cs, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		sbs, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 3 || len(sbs) != 3 {
			t.Fatalf("listed %d containers and %d sandboxes, want 3 and 3", len(cs), len(sbs))
		}
		return cs, sbs
	}
	before := listcodec.Default.Stats()
	cs0, sbs0 := list()
	cs1, sbs1 := list()
	mid := listcodec.Default.Stats()
	for i := range 3 {
		if cs0[i] != cs1[i] || sbs0[i] != sbs1[i] {
			t.Fatalf("item %d of the second list was decoded again", i)
		}
	}
	if got := mid.EncodingsReused - before.EncodingsReused; got < 6 {
		t.Fatalf("crisim reused %d kept encodings for the second list, want its 6 items", got)
	}

	if err := rs.StartContainer(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	cs2, sbs2 := list()
	after := listcodec.Default.Stats()
	for i := range 3 {
		changed := cs2[i].GetId() == ids[1]
		if (cs2[i] != cs1[i]) != changed || sbs2[i] != sbs1[i] {
			t.Fatalf("item %d (%s): reused %v, want %v", i, cs2[i].GetId(), cs2[i] == cs1[i], !changed)
		}
		if changed && cs2[i].GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("the started container listed as %v", cs2[i].GetState())
		}
	}
	if got := after.Encoded - mid.Encoded; got != 1 {
		t.Fatalf("crisim encoded %d items for the third list, want 1 (the started container)", got)
	}
}
