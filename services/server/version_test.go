package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/internal/grpctest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// serveVersion serves svc over bufconn and returns a connection to it.
func serveVersion(t *testing.T, svc *VersionService) *grpc.ClientConn {
	t.Helper()
	return grpctest.Serve(t, func(s *grpc.Server) { syncpodv1.RegisterVersionServiceServer(s, svc) })
}

// TestVersionServiceAsksItsPeers: the planner's answer carries its own
// build and each peer's, in order, with the runtime each talks to; a peer
// that answers as another component, one that serves no version and a
// runtime that fails are each reported, without failing the call.
func TestVersionServiceAsksItsPeers(t *testing.T) {
	executor := serveVersion(t, NewVersionService(VersionOptions{Component: "executor", Version: "v1.0.0",
		Runtime: func(context.Context) (*runtimeapi.VersionResponse, error) {
			return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "1.6.20", RuntimeApiVersion: "v1"}, nil
		}}))
	pleg := serveVersion(t, NewVersionService(VersionOptions{Component: "pleg", Version: "v1.0.1",
		Runtime: func(context.Context) (*runtimeapi.VersionResponse, error) { return nil, errors.New("runtime down") }}))
	bareConn := grpctest.Serve(t, func(*grpc.Server) {}) // serves nothing

	planner := serveVersion(t, NewVersionService(VersionOptions{Component: "planner", Version: "v1.0.2", Peers: []VersionPeer{
		{Component: "executor", Address: "e:1", Conn: executor},
		{Component: "pleg", Address: "p:1", Conn: pleg},
		{Component: "executor", Address: "wrong:1", Conn: pleg}, // the PLEG's address given as the executor's
		{Component: "pleg", Address: "bare:1", Conn: bareConn},
	}}))
	resp, err := syncpodv1.NewVersionServiceClient(planner).GetVersion(context.Background(), &syncpodv1.GetVersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if s := resp.GetServer(); s.GetComponent() != "planner" || s.GetVersion() != "v1.0.2" || !strings.HasPrefix(s.GetGoVersion(), "go") || !strings.Contains(s.GetPlatform(), "/") || s.GetRuntime() != nil {
		t.Errorf("server %v", s)
	}
	p := resp.GetPeers()
	if len(p) != 4 {
		t.Fatalf("peers %v, want 4", p)
	}
	if p[0].GetVersion() != "v1.0.0" || p[0].GetAddress() != "e:1" || p[0].GetRuntime().GetName() != "containerd" || p[0].GetRuntime().GetVersion() != "1.6.20" || p[0].GetError() != "" {
		t.Errorf("executor %v", p[0])
	}
	if p[1].GetVersion() != "v1.0.1" || !strings.Contains(p[1].GetRuntime().GetError(), "runtime down") || p[1].GetError() != "" {
		t.Errorf("pleg with its runtime down %v", p[1])
	}
	if !strings.Contains(p[2].GetError(), "answers as pleg, not executor") {
		t.Errorf("misconfigured peer %v", p[2])
	}
	if p[3].GetVersion() != "" || !strings.Contains(p[3].GetError(), "Unimplemented") || p[3].GetAddress() != "bare:1" {
		t.Errorf("peer without a version service %v", p[3])
	}
}
