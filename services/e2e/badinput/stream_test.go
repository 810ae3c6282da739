package badinput

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorservice "github.com/syncpod/syncpod/executor/service"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// TestStreamLaterMessagesAreBounded: the executor checks every message of
// an exec session, not only the first: against a real streaming server
// (crisim's), good input goes through, and a message over the bounds ends
// the session with InvalidArgument naming the field.
func TestStreamLaterMessagesAreBounded(t *testing.T) {
	endpoint, rt := crisimtest.Start(t, crisim.Options{Mode: crisim.ModeProcess})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.ServeStreams(sctx, lis) }()
	t.Cleanup(func() { stop(); <-served })

	rs, is := crisimtest.Clients(t, endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "s", Namespace: "ns", Uid: uid}, LogDirectory: t.TempDir()}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "img"},
		Command: []string{"sleep", "60"}, LogPath: "app.log"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}

	store, err := backoff.Open(filepath.Join(t.TempDir(), "executor.db"), backoff.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	conn := cri.NewConn(endpoint, 10*time.Second, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = conn.Close() })
	r, err := runner.New(runner.Config{Runtime: runtimeclient.NewLazyRuntime(conn, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewLazyImages(conn, nil, runtimeclient.Timeouts{}),
		Backoff: store, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := executorv1.NewExecutorServiceClient(serve(t, func(g *grpc.Server) {
		executorv1.RegisterExecutorServiceServer(g, executorservice.New(r, store, nil, nil))
	}, false))

	stdin := func(b []byte) *syncpodv1.StreamInput {
		return &syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Stdin{Stdin: b}}
	}
	for _, tc := range []struct {
		name  string
		tty   bool
		bad   *syncpodv1.StreamInput
		field string
	}{
		{"over 1 MiB of stdin in one message", false, stdin(make([]byte, validation.MaxStreamChunk+1)), "input.stdin"},
		{"a terminal 70,000 rows high", true, &syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Resize{Resize: &syncpodv1.TerminalSize{Width: 80, Height: 70000}}}, "input.resize.height"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := c.Exec(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(&executorv1.ExecRequest{Start: &executorv1.ExecStart{ContainerId: id, Command: []string{"cat"}, Stdin: true, Tty: tc.tty}}); err != nil {
				t.Fatal(err)
			}
			// Good input first: cat answers it, so the session is up.
			if err := s.Send(&executorv1.ExecRequest{Input: stdin([]byte("ok\n"))}); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for !strings.Contains(out.String(), "ok") {
				msg, err := s.Recv()
				if err != nil {
					t.Fatalf("before the bad message: %v (output %q)", err, out.String())
				}
				out.Write(msg.GetOutput().GetStdout())
			}
			if err := s.Send(&executorv1.ExecRequest{Input: tc.bad}); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			for {
				_, err := s.Recv()
				if err == nil {
					continue
				}
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.field+": ") {
					t.Fatalf("session ended with %v, want InvalidArgument naming %s", err, tc.field)
				}
				check(t, err, tc.field)
				return
			}
		})
	}
}
