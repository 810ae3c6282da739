package wake

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/containerd/api/events"
	eventsapi "github.com/containerd/containerd/api/services/events/v1"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
)

// TestContainerdExecExitWakesNothing_R34: on the test containerd, the
// /tasks/exit of an exec's process (what an exec probe leaves) reads as an
// exec's and wakes nothing, while the container's own exit wakes: the
// events as containerd really sends them, not as a fake writes them
//
func TestContainerdExecExitWakesNothing_R34(t *testing.T) {
	ep := containerdtest.Endpoint(t)
	rs := containerdtest.RuntimeService(t)
	conn, err := Dial(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	stream, err := eventsapi.NewEventsClient(conn).Subscribe(ctx, &eventsapi.SubscribeRequest{Filters: filters()})
	if err != nil {
		t.Fatal(err)
	}
	// The exits of the test's own container, in order; other tests share
	// the namespace.
	type exit struct {
		id    string
		wakes bool
	}
	started := make(chan struct{})
	exits := make(chan exit, 16)
	idc := make(chan string, 1)
	go func() {
		id := <-idc
		for {
			env, err := stream.Recv()
			if err != nil {
				return
			}
			switch env.GetTopic() {
			case "/tasks/start":
				var s events.TaskStart
				if proto.Unmarshal(env.GetEvent().GetValue(), &s) == nil && s.GetContainerID() == id {
					close(started)
				}
			case topicExit:
				var e events.TaskExit
				if proto.Unmarshal(env.GetEvent().GetValue(), &e) == nil && e.GetContainerID() == id {
					exits <- exit{id: e.GetID(), wakes: wakes(env)}
				}
			}
		}
	}()

	cfg := containerdtest.HostNetworkSandboxConfig(t)
	sb := containerdtest.RunSandbox(t, rs, cfg)
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "probed"}, Image: &runtimeapi.ImageSpec{Image: containerdtest.BusyboxImage()},
		Command: []string{"sleep", "3600"}, LogPath: "probed.log"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	idc <- id
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The subscription is registered once one of its events arrives.
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("no /tasks/start event for the container")
	}
	if _, _, err := rs.ExecSync(ctx, id, []string{"true"}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rs.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	var got []exit
	for len(got) < 2 {
		select {
		case e := <-exits:
			got = append(got, e)
		case <-ctx.Done():
			t.Fatalf("the container's exits seen: %+v; want the exec's, then its own", got)
		}
	}
	if got[0].id == id || got[0].wakes {
		t.Errorf("the exec's exit: process %q, wakes %v; want an exec's process, waking nothing", got[0].id, got[0].wakes)
	}
	if got[1].id != id || !got[1].wakes {
		t.Errorf("the container's exit: process %q, wakes %v; want its own process %q, waking", got[1].id, got[1].wakes, id)
	}
	if err := rs.RemoveContainer(ctx, id); err != nil {
		t.Error(err)
	}
}
