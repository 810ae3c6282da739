package runtimeclient

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
)

// A CallLog records the calls made through the views it was given to,
// failed ones marked, and nothing made through the services themselves.
func TestACallLogRecordsTheCallsOfItsViewsOnly(t *testing.T) {
	ctx := context.Background()
	rt := NewRuntime(critest.NewRuntime(), nil, Timeouts{})
	img := NewImages(critest.NewImages("busybox"), nil, Timeouts{})
	var l CallLog
	if _, err := rt.WithCallLog(&l).ListPodSandbox(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := img.WithCallLog(&l).ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, false); err != nil {
		t.Fatal(err)
	}
	if err := rt.WithCallLog(&l).StartContainer(ctx, "none"); err == nil {
		t.Fatal("started a container that does not exist")
	}
	if _, err := rt.ListContainers(ctx, nil); err != nil { // not through a view
		t.Fatal(err)
	}
	calls := l.Calls()
	var ops []string
	for _, c := range calls {
		ops = append(ops, c.Op)
	}
	if len(calls) != 3 || ops[0] != OpListPodSandbox || ops[1] != OpImageStatus || ops[2] != OpStartContainer {
		t.Fatalf("recorded %v, want the list, the image status and the failed start", ops)
	}
	if calls[0].Failed || calls[1].Failed || !calls[2].Failed || calls[0].Start.IsZero() {
		t.Fatalf("recorded %+v", calls)
	}
}
