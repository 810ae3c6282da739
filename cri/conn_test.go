package cri

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestConnUnavailableUntilRuntimeUp: before the runtime listens, every
// call fails with an error that is ErrUnavailable and codes.Unavailable,
// and a second call within RetryInterval does not dial again; once the
// runtime is up the next dial succeeds and the connection is kept.
func TestConnUnavailableUntilRuntimeUp(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	c := NewConn("unix://"+sock, 2*time.Second, nil)
	t.Cleanup(func() { _ = c.Close() })
	o := c.Observer()

	_, err := o.ListPodSandbox(t.Context(), nil)
	if !errors.Is(err, ErrUnavailable) || status.Code(err) != codes.Unavailable {
		t.Fatalf("before the runtime: err %v (code %s), want ErrUnavailable and Unavailable", err, status.Code(err))
	}
	first := c.rsDialed.lastTry
	if _, err2 := c.Runtime(t.Context()); err2 != err || c.rsDialed.lastTry != first {
		t.Errorf("second call within RetryInterval: err %v, dialled again: %v", err2, c.rsDialed.lastTry != first)
	}

	serveVersion(t, sock)
	c.mu.Lock()
	c.rsDialed.lastTry = time.Now().Add(-RetryInterval) // the interval has passed
	c.mu.Unlock()
	rs, err := c.Runtime(t.Context())
	if err != nil {
		t.Fatalf("after the runtime is up: %v", err)
	}
	if again, _ := c.Runtime(t.Context()); again != rs {
		t.Error("the connection is not kept")
	}
	if _, err := o.ListContainers(t.Context(), nil); status.Code(err) != codes.Unimplemented {
		t.Errorf("a call through the observer reaches the runtime: %v", err)
	}
	if v, err := o.Version(t.Context(), "v1"); err != nil || v.GetRuntimeName() != "test" {
		t.Errorf("Version through the observer: %v, %v", v, err)
	}
}

// TestConnImagesDialledSeparately: the image service is its own lazy dial
// and fails as the runtime's does.
func TestConnImagesDialledSeparately(t *testing.T) {
	c := NewConn("unix://"+filepath.Join(t.TempDir(), "none.sock"), time.Second, nil)
	if _, err := c.Images(t.Context()); !errors.Is(err, ErrUnavailable) || status.Code(err) != codes.Unavailable {
		t.Fatalf("images: %v", err)
	}
	if !c.rsDialed.lastTry.IsZero() {
		t.Error("asking for images dialled the runtime service")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close with nothing connected: %v", err)
	}
}

// versionServer answers Version only, which is all the kubelet's client
// asks when it connects.
type versionServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
}

func (versionServer) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "test", RuntimeVersion: "0", RuntimeApiVersion: "v1"}, nil
}

func serveVersion(t *testing.T, sock string) {
	t.Helper()
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, versionServer{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
}
