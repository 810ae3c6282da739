package server

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/server/access"
)

// VersionPeer is a service another one calls, whose version it reports.
type VersionPeer struct {
	// Component is its name: "executor", "pleg".
	Component string
	// Address it is dialled at, as given on the command line.
	Address string
	// Conn to it.
	Conn grpc.ClientConnInterface
}

// VersionOptions configure a VersionService.
type VersionOptions struct {
	// Component is the name of the binary that answers: "planner",
	// "executor", "pleg". Required.
	Component string
	// Version of the build; empty means Version (set at link time).
	Version string
	// Runtime asks the CRI runtime for its version (CRI Version), for
	// components that talk to one; nil for the others.
	Runtime func(ctx context.Context) (*runtimeapi.VersionResponse, error)
	// Peers are asked for their own version on every call, in this order.
	Peers []VersionPeer
	// PeerTimeout bounds each question to a peer or to the runtime; zero
	// means 5 s.
	PeerTimeout time.Duration
}

// VersionService implements syncpodv1.VersionServiceServer: every
// syncpod server answers it beside its own service.
type VersionService struct {
	syncpodv1.UnsafeVersionServiceServer
	opts VersionOptions
}

// NewVersionService returns the version service of one binary.
func NewVersionService(opts VersionOptions) *VersionService {
	if opts.Version == "" {
		opts.Version = access.Version
	}
	if opts.PeerTimeout <= 0 {
		opts.PeerTimeout = 5 * time.Second
	}
	return &VersionService{opts: opts}
}

// GetVersion reports this binary's build, its runtime's and its peers'.
// Peers and the runtime are asked in parallel; one that does not answer
// is listed with its error and does not fail the call.
func (s *VersionService) GetVersion(ctx context.Context, _ *syncpodv1.GetVersionRequest) (*syncpodv1.GetVersionResponse, error) {
	self := &syncpodv1.ComponentVersion{
		Component: s.opts.Component,
		Version:   s.opts.Version,
		GoVersion: goVersion(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	resp := &syncpodv1.GetVersionResponse{Server: self, Peers: make([]*syncpodv1.ComponentVersion, len(s.opts.Peers))}
	var g errgroup.Group
	if s.opts.Runtime != nil {
		g.Go(func() error {
			self.Runtime = s.runtimeVersion(ctx)
			return nil
		})
	}
	for i, p := range s.opts.Peers {
		g.Go(func() error {
			resp.Peers[i] = s.peerVersion(ctx, p)
			return nil
		})
	}
	_ = g.Wait() // the goroutines report failures in the response
	return resp, nil
}

func (s *VersionService) runtimeVersion(ctx context.Context) *syncpodv1.RuntimeVersionInfo {
	ctx, cancel := context.WithTimeout(ctx, s.opts.PeerTimeout)
	defer cancel()
	v, err := s.opts.Runtime(ctx)
	if err != nil {
		return &syncpodv1.RuntimeVersionInfo{Error: err.Error()}
	}
	return &syncpodv1.RuntimeVersionInfo{Name: v.GetRuntimeName(), Version: v.GetRuntimeVersion(), ApiVersion: v.GetRuntimeApiVersion()}
}

func (s *VersionService) peerVersion(ctx context.Context, p VersionPeer) *syncpodv1.ComponentVersion {
	ctx, cancel := context.WithTimeout(ctx, s.opts.PeerTimeout)
	defer cancel()
	resp, err := syncpodv1.NewVersionServiceClient(p.Conn).GetVersion(ctx, &syncpodv1.GetVersionRequest{})
	if err != nil {
		return &syncpodv1.ComponentVersion{Component: p.Component, Address: p.Address, Error: err.Error()}
	}
	v := resp.GetServer()
	v.Address = p.Address
	if v.GetComponent() != p.Component {
		// A misconfigured address (the PLEG's given as the executor's)
		// answers too: say so rather than mislabel it.
		v.Error = "this address answers as " + v.GetComponent() + ", not " + p.Component
	}
	return v
}

// goVersion is the Go release the binary was built with.
func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.GoVersion != "" {
		return bi.GoVersion
	}
	return runtime.Version()
}
