package listcodec_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/cri/listcodec"
)

// Through a real CRI client and server (crisim over its socket, both in
// this process), each with the codec passed to it: crisim sends the kept
// encoding of each item it listed before, the client (a cri.Conn made
// WithListCodec, as syncpod-pleg makes it) hands back the message it
// decoded before, and a container that changed state is a new item,
// encoded and decoded anew.
func TestCrisimAndTheCRIClientListThroughTheCaches_R13_2(t *testing.T) {
	server, client := listcodec.NewGRPC(), listcodec.NewGRPC()
	ep, _ := crisimtest.StartWithCodec(t, crisim.Options{Mode: crisim.ModeSimulated}, server)
	rs, is := crisimtest.Clients(t, ep)
	conn := cri.NewConn(ep, 30*time.Second, nil, cri.WithListCodec(client))
	t.Cleanup(func() { _ = conn.Close() })
	obs := conn.Observer()
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
		cs, err := obs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		sbs, err := obs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 3 || len(sbs) != 3 {
			t.Fatalf("listed %d containers and %d sandboxes, want 3 and 3", len(cs), len(sbs))
		}
		return cs, sbs
	}
	before := server.Stats()
	cs0, sbs0 := list()
	cs1, sbs1 := list()
	mid := server.Stats()
	for i := range 3 {
		if cs0[i] != cs1[i] || sbs0[i] != sbs1[i] {
			t.Fatalf("item %d of the second list was decoded again", i)
		}
	}
	if got := mid.EncodingsReused - before.EncodingsReused; got < 6 {
		t.Fatalf("crisim reused %d kept encodings for the second list, want its 6 items", got)
	}
	if s := client.Stats(); s.Reused != 6 || s.Decoded != 6 {
		t.Fatalf("client codec %+v, want the first list's 6 items decoded and the second's reused", s)
	}

	if err := rs.StartContainer(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	cs2, sbs2 := list()
	after := server.Stats()
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

// A connection made without the codec decodes every list answer anew, and
// the codec, unused, counts nothing: the codec is used where it is passed,
// and only there.
func TestAConnWithoutTheCodecDecodesEveryList(t *testing.T) {
	server, unused := listcodec.NewGRPC(), listcodec.NewGRPC()
	ep, _ := crisimtest.StartWithCodec(t, crisim.Options{Mode: crisim.ModeSimulated}, server)
	rs, _ := crisimtest.Clients(t, ep)
	ctx := context.Background()
	if _, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u"}}, ""); err != nil {
		t.Fatal(err)
	}
	conn := cri.NewConn(ep, 30*time.Second, nil)
	t.Cleanup(func() { _ = conn.Close() })
	var lists [2][]*runtimeapi.PodSandbox
	for i := range lists {
		sbs, err := conn.Observer().ListPodSandbox(ctx, nil)
		if err != nil || len(sbs) != 1 {
			t.Fatalf("listed %v (%v), want one sandbox", sbs, err)
		}
		lists[i] = sbs
	}
	if lists[0][0] == lists[1][0] {
		t.Fatal("a connection without the codec handed back the same sandbox message twice")
	}
	if s := unused.Stats(); s != (listcodec.Stats{}) {
		t.Fatalf("a codec passed nowhere counted %+v", s)
	}
	if s := server.Stats(); s.Encoded != 1 || s.EncodingsReused != 1 {
		t.Fatalf("crisim's codec %+v, want the sandbox encoded once and its encoding sent again", s)
	}
}
