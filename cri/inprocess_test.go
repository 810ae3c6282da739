package cri_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/internal/grpctest"
)

// A Conn made WithInProcess calls the runtime through the channel while
// one is offered, whatever its socket: crisim's pods are created, started,
// listed, inspected and streamed through it, its errors keep their codes;
// while none is offered, it goes to the socket (here none: Unavailable).
func TestAConnWithInProcessCallsTheRuntimeThroughTheChannel(t *testing.T) {
	rt, err := crisim.New(crisim.Options{Mode: crisim.ModeSimulated, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Shutdown)
	cc := grpctest.Serve(t, func(s *grpc.Server) { crisim.Register(s, rt) })
	var offered atomic.Bool
	offered.Store(true)
	conn := cri.NewConn("unix://"+filepath.Join(t.TempDir(), "none.sock"), 10*time.Second, nil,
		cri.WithInProcess(func() grpc.ClientConnInterface {
			if offered.Load() {
				return cc
			}
			return nil
		}))
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	rs, err := conn.Runtime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan *runtimeapi.ContainerEventResponse, 16)
	established := make(chan struct{})
	go func() {
		_ = rs.GetContainerEvents(ctx, events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	<-established

	is, err := conn.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	img := &runtimeapi.ImageSpec{Image: "busybox:1.36"}
	if _, err := is.PullImage(ctx, img, nil, nil); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	if st, err := is.ImageStatus(ctx, img, false); err != nil || st.GetImage() == nil {
		t.Fatalf("ImageStatus: %v, %v", st, err)
	}
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u1"}}
	sb, err := rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: img}, sbCfg)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}

	o := conn.Observer()
	l, err := o.ListContainers(ctx, nil)
	if err != nil || len(l) != 1 || l[0].GetId() != id || l[0].GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("ListContainers: %v, %v; want %s running", l, err, id)
	}
	if sbs, err := o.ListPodSandbox(ctx, nil); err != nil || len(sbs) != 1 || sbs[0].GetId() != sb {
		t.Fatalf("ListPodSandbox: %v, %v", sbs, err)
	}
	if st, err := o.PodSandboxStatus(ctx, sb, false); err != nil || st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("PodSandboxStatus: %v, %v", st, err)
	}
	if _, err := o.ContainerStatus(ctx, "missing", false); status.Code(err) != codes.NotFound {
		t.Fatalf("ContainerStatus of a missing container: %v, want NotFound", err)
	}
	seen := map[runtimeapi.ContainerEventType]bool{}
	for !seen[runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT] {
		select {
		case ev := <-events:
			seen[ev.GetContainerEventType()] = true
		case <-ctx.Done():
			t.Fatalf("no started event through the channel's stream; saw %v", seen)
		}
	}

	offered.Store(false)
	if _, err := conn.Runtime(ctx); !errors.Is(err, cri.ErrUnavailable) {
		t.Fatalf("with no channel offered, Runtime went to the missing socket: err %v, want ErrUnavailable", err)
	}
	if _, err := o.ListContainers(ctx, nil); !errors.Is(err, cri.ErrUnavailable) {
		t.Fatalf("with no channel offered, a list went to the missing socket: err %v, want ErrUnavailable", err)
	}
}

// odd is a runtime whose answers a client has to check: a sandbox without
// an id, statuses without their required fields, a version without names,
// a command that exits 3, a pull that fails Unknown, a missing image ref.
type odd struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer
}

func (odd) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "odd"}, nil
}

func (odd) RunPodSandbox(context.Context, *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	return &runtimeapi.RunPodSandboxResponse{}, nil
}

func (odd) CreateContainer(context.Context, *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	return &runtimeapi.CreateContainerResponse{}, nil
}

func (odd) PodSandboxStatus(context.Context, *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: "sb", Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}}}, nil
}

func (odd) ContainerStatus(context.Context, *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "c", Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, CreatedAt: 1}}, nil
}

func (odd) ExecSync(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	return &runtimeapi.ExecSyncResponse{Stdout: []byte("out"), Stderr: []byte("bad"), ExitCode: 3}, nil
}

func (odd) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}}, nil
}

func (odd) PullImage(context.Context, *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	return nil, status.Error(codes.Unknown, "registry said no")
}

func (odd) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:x"}}, nil
}

func (odd) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

func (odd) StopContainer(context.Context, *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	return nil, status.Error(codes.NotFound, "container \"c\" not found")
}

// The in-process client answers as the kubelet's remote client does:
// the same checks of a runtime's answers, with the same errors, the same
// exit-code error of a command, the same codes passed through. The same
// odd runtime is served on a socket, to the remote client, and on a
// channel, to a Conn made WithInProcess.
func TestTheInProcessClientAnswersAsTheRemoteClient(t *testing.T) {
	register := func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, odd{})
		runtimeapi.RegisterImageServiceServer(s, odd{})
	}
	cc := grpctest.Serve(t, register)
	conn := cri.NewConn("unix:///nonexistent.sock", 10*time.Second, nil, cri.WithInProcess(func() grpc.ClientConnInterface { return cc }))
	ctx := t.Context()
	chRS, err := conn.Runtime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chIS, err := conn.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	remoteRS, remoteIS := remoteClients(t)

	img := &runtimeapi.ImageSpec{Image: "busybox"}
	for _, tc := range []struct {
		name string
		do   func(internalapi.RuntimeService, internalapi.ImageManagerService) string
	}{
		{"a sandbox without an id", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			id, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}}, "")
			return fmt.Sprintf("%q %v", id, err)
		}},
		{"a container without an id", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			id, err := rs.CreateContainer(ctx, "sb", &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}}, nil)
			return fmt.Sprintf("%q %v", id, err)
		}},
		{"a sandbox status without its metadata", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			st, err := rs.PodSandboxStatus(ctx, "sb", false)
			return fmt.Sprintf("%v %v", st, err)
		}},
		{"a container status without its image", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			st, err := rs.ContainerStatus(ctx, "c", false)
			return fmt.Sprintf("%v %v", st, err)
		}},
		{"a command that exits 3", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			out, errOut, err := rs.ExecSync(ctx, "c", []string{"false"}, time.Second)
			var exit utilexec.CodeExitError
			return fmt.Sprintf("%s %s %v exit=%v code=%d", out, errOut, err, errors.As(err, &exit), exit.Code)
		}},
		{"a runtime status without its conditions", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			st, err := rs.Status(ctx, false)
			return fmt.Sprintf("%v %v", st, err)
		}},
		{"a version without all its names", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			v, err := rs.Version(ctx, "v1")
			return fmt.Sprintf("%v %v", v, err)
		}},
		{"a container already gone", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			err := rs.StopContainer(ctx, "c", 1)
			return fmt.Sprintf("%v %s", err, status.Code(err))
		}},
		{"an unimplemented call", func(rs internalapi.RuntimeService, _ internalapi.ImageManagerService) string {
			_, err := rs.ListPodSandbox(ctx, nil)
			return status.Code(err).String()
		}},
		{"a pull that fails Unknown", func(_ internalapi.RuntimeService, is internalapi.ImageManagerService) string {
			ref, err := is.PullImage(ctx, img, nil, nil)
			_, isStatus := status.FromError(err)
			return fmt.Sprintf("%q %v status=%v", ref, err, isStatus)
		}},
		{"an image without its size", func(_ internalapi.RuntimeService, is internalapi.ImageManagerService) string {
			st, err := is.ImageStatus(ctx, img, false)
			return fmt.Sprintf("%v %v", st, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.do(remoteRS, remoteIS)
			if got := tc.do(chRS, chIS); got != want {
				t.Errorf("in-process: %s\nremote:     %s", got, want)
			}
		})
	}
}

// remoteClients are the kubelet's remote clients of the odd runtime on a
// unix socket (their dial asks Version and ImageFsInfo, and takes any
// answer).
func remoteClients(t *testing.T) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	t.Helper()
	dir, err := os.MkdirTemp("", "odd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	lis, err := net.Listen("unix", filepath.Join(dir, "odd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, odd{})
	runtimeapi.RegisterImageServiceServer(srv, odd{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return crisimtest.Clients(t, "unix://"+filepath.Join(dir, "odd.sock"))
}
