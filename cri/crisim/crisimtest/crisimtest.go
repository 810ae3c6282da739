package crisimtest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"

	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/listcodec"
)

// Start runs a crisim Runtime built from opts on a new unix socket and
// returns its endpoint ("unix:///..."). Its server sends the list
// answers through a listcodec.Codec of its own, as syncpod-crisim does. A
// nil opts.Logger discards logs. The socket lives in a short temporary
// directory (unix socket paths are limited to about 100 bytes, which
// t.TempDir() can exceed).
func Start(t testing.TB, opts crisim.Options) (endpoint string, rt *crisim.Runtime) {
	t.Helper()
	return StartWithCodec(t, opts, listcodec.NewGRPC())
}

// StartWithCodec is Start with codec as its server's codec, for a test
// that looks at what the codec did.
func StartWithCodec(t testing.TB, opts crisim.Options, codec *listcodec.Codec) (endpoint string, rt *crisim.Runtime) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rt, err := crisim.New(opts)
	if err != nil {
		t.Fatalf("crisim.New: %v", err)
	}
	dir, err := os.MkdirTemp("", "crisim")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "crisim.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(codec.ServerOption())
	crisim.Register(srv, rt)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(lis) }()
	t.Cleanup(func() {
		rt.Shutdown()
		srv.Stop()
		<-served
		_ = os.RemoveAll(dir)
	})
	return "unix://" + sock, rt
}

// callTimeout is cri-client's connection timeout, which it also puts on
// every call: generous, since the same clients drive containerd in the CRI
// suite, where one call has taken seconds on a loaded machine.
const callTimeout = 30 * time.Second

// Clients dials endpoint with the kubelet's own CRI clients; they are
// closed by the test's cleanup.
func Clients(t testing.TB, endpoint string) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(callTimeout).Build(ctx)
	if err != nil {
		t.Fatalf("CRI runtime client for %s: %v", endpoint, err)
	}
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(callTimeout).Build(ctx)
	if err != nil {
		t.Fatalf("CRI image client for %s: %v", endpoint, err)
	}
	t.Cleanup(func() {
		_ = rs.Close(context.Background())
		_ = is.Close(context.Background())
	})
	return rs, is
}
