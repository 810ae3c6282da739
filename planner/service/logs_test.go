package service

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func TestContainerLogsGoesThroughTheExecutor(t *testing.T) {
	c, _, ex := serveWithExecutor(t)
	ex.SetLogs("one", "two")
	ctx := context.Background()
	applied, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: &syncpodv1.Pod{Name: "web", Spec: &syncpodv1.PodSpec{
		InitContainers: []*syncpodv1.Container{{Name: "setup", Image: "busybox"}},
		Containers:     []*syncpodv1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	read := func(req *plannerv1.ContainerLogsRequest) (string, error) {
		stream, err := c.ContainerLogs(ctx, req)
		if err != nil {
			return "", err
		}
		var got []string
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return strings.Join(got, ","), nil
			}
			if err != nil {
				return strings.Join(got, ","), err
			}
			for _, l := range msg.GetLines() {
				got = append(got, string(l.GetContent()))
			}
		}
	}
	tail := int64(5)
	got, err := read(&plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app", Follow: true, TailLines: &tail})
	if err != nil || got != "one,two" {
		t.Fatalf("logs: %q, %v", got, err)
	}
	sent := ex.Requests().Logs[0]
	if sent.GetPodUid() != applied.GetPod().GetUid() || sent.GetContainer() != "app" || !sent.GetFollow() || sent.GetTailLines() != 5 {
		t.Fatalf("executor got %v", sent)
	}
	for _, tc := range []struct {
		name string
		req  *plannerv1.ContainerLogsRequest
		code codes.Code
		msg  string
	}{
		{"wrong container lists the pod's", &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "nosuch"}, codes.NotFound, "choose one of [setup app side]"},
		{"unknown pod", &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "nosuch"}, Container: "app"}, codes.NotFound, "nosuch"},
		{"every problem at once", &plannerv1.ContainerLogsRequest{TailLines: func() *int64 { n := int64(-1); return &n }()}, codes.InvalidArgument, "pod: required; container: required; tail_lines: must be >= 0"},
		{"the executor's status passes through", &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app", Previous: true}, codes.NotFound, "executor: previous terminated container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(tc.req)
			wantStatus(t, err, tc.code, tc.msg)
		})
	}
}

func TestContainerLogsWithoutExecutorIsUnavailable(t *testing.T) {
	c, _ := setup(t)
	stream, err := c.ContainerLogs(context.Background(), &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want Unavailable", err)
	}
}
