package service

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

// addLoggedContainer puts a container of pod u1 with a log file into the
// fake runtime.
func addLoggedContainer(t *testing.T, rt *critest.Runtime, id, name string, created time.Time, state runtimeapi.ContainerState, log string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), id+".log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	rt.AddContainer("sb", id, name, state)
	rt.EditContainer(id, func(c *runtimeapi.ContainerStatus) {
		c.Labels = map[string]string{crilabels.PodUID: "u1", crilabels.ContainerName: name}
		c.LogPath = path
		c.CreatedAt = created.UnixNano()
	})
	return path
}

func readLogs(t *testing.T, c executorv1.ExecutorServiceClient, req *executorv1.ContainerLogsRequest) (string, error) {
	t.Helper()
	stream, err := c.ContainerLogs(context.Background(), req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		for _, l := range msg.GetLines() {
			b.WriteString(string(l.GetContent()) + "\n")
		}
	}
}

func TestContainerLogs(t *testing.T) {
	c, rt, _ := newClient(t)
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	addLoggedContainer(t, rt, "old", "app", t0, runtimeapi.ContainerState_CONTAINER_EXITED,
		"2026-11-21T12:00:00Z stdout F first run\n2026-11-21T12:00:01Z stderr F crashed\n")
	addLoggedContainer(t, rt, "new", "app", t0.Add(time.Minute), runtimeapi.ContainerState_CONTAINER_EXITED,
		"2026-11-21T12:01:00Z stdout P hel\n2026-11-21T12:01:00Z stdout F lo\n2026-11-21T12:01:01Z stdout F two\n2026-11-21T12:01:02Z stderr F three\n")
	tail := int64(2)
	zero := int64(0)
	for _, tc := range []struct {
		name string
		req  *executorv1.ContainerLogsRequest
		want string
	}{
		{"newest instance, partial lines joined", &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "app"}, "hello\ntwo\nthree\n"},
		{"previous instance", &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "app", Previous: true}, "first run\ncrashed\n"},
		{"tail", &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "app", TailLines: &tail}, "two\nthree\n"},
		{"tail 0", &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "app", TailLines: &zero}, ""},
		{"since", &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "app", SinceTime: timestamppb.New(t0.Add(61 * time.Second))}, "two\nthree\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLogs(t, c, tc.req)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		req  *executorv1.ContainerLogsRequest
		code codes.Code
		msg  string
	}{
		{"every problem at once", &executorv1.ContainerLogsRequest{TailLines: func() *int64 { n := int64(-1); return &n }()}, codes.InvalidArgument, "pod_uid: required; container: required; tail_lines: must be >= 0"},
		{"no such container", &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "nosuch"}, codes.NotFound, `container "nosuch"`},
		{"no previous instance", &executorv1.ContainerLogsRequest{PodUid: "u2", Container: "app", Previous: true}, codes.NotFound, "previous terminated container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readLogs(t, c, tc.req)
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v; want %s with %q", err, tc.code, tc.msg)
			}
		})
	}
}

// TestPreviousInABackOffIsTheLastTerminatedInstance: in a crash loop's
// back-off, with the instance before it collected, --previous reads the
// newest, exited instance (what the kubelet's lastState names).
func TestPreviousInABackOffIsTheLastTerminatedInstance(t *testing.T) {
	c, rt, _ := newClient(t)
	addLoggedContainer(t, rt, "only", "crash", time.Now(), runtimeapi.ContainerState_CONTAINER_EXITED,
		"2026-11-21T12:00:00Z stdout F run 3\n")
	got, err := readLogs(t, c, &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "crash", Previous: true})
	if err != nil || got != "run 3\n" {
		t.Fatalf("got %q, %v; want the exited instance's log", got, err)
	}
	// A running instance alone has no previous.
	addLoggedContainer(t, rt, "live", "tick", time.Now(), runtimeapi.ContainerState_CONTAINER_RUNNING, "2026-11-21T12:00:00Z stdout F tick\n")
	if _, err := readLogs(t, c, &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "tick", Previous: true}); status.Code(err) != codes.NotFound {
		t.Fatalf("running instance alone: %v, want NotFound", err)
	}
}

// TestContainerLogsFollow: a followed log sends lines as they are written
// and ends once the container has stopped and its log is read to the end.
func TestContainerLogsFollow(t *testing.T) {
	c, rt, _ := newClient(t)
	path := addLoggedContainer(t, rt, "run", "ticker", time.Now(), runtimeapi.ContainerState_CONTAINER_RUNNING, "2026-11-21T12:00:00Z stdout F tick 1\n")
	stream, err := c.ContainerLogs(context.Background(), &executorv1.ContainerLogsRequest{PodUid: "u1", Container: "ticker", Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() string {
		t.Helper()
		msg, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, l := range msg.GetLines() {
			s = append(s, string(l.GetContent()))
		}
		return strings.Join(s, ",")
	}
	if got := recv(); got != "tick 1" {
		t.Fatalf("first batch %q", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Half a physical line is not sent until its newline is written.
	if _, err := f.WriteString("2026-11-21T12:00:01Z stdout F ti"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("ck 2\n"); err != nil {
		t.Fatal(err)
	}
	if got := recv(); got != "tick 2" {
		t.Fatalf("second batch %q", got)
	}
	if _, err := f.WriteString("2026-11-21T12:00:02Z stdout F last words\n"); err != nil {
		t.Fatal(err)
	}
	rt.ExitContainer("run", 0, "", time.Now().UnixNano())
	var rest []string
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range msg.GetLines() {
			rest = append(rest, string(l.GetContent()))
		}
	}
	if strings.Join(rest, ",") != "last words" {
		t.Fatalf("after the exit: %q", rest)
	}
}
