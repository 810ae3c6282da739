package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// rawCodec passes gRPC messages through as bytes, so the proxy forwards
// any call without knowing its types.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// stallRule says which unary CRI calls the proxy stalls: the first count
// calls of method whose request matches.
type stallRule struct {
	method string
	match  func(req []byte) bool
	count  int
	// late: once the caller gives up, the stalled call is still carried
	// out (a runtime that was slow, not dead, and whose answer is lost);
	// otherwise it is dropped.
	late bool
}

// criProxy is a unary gRPC proxy in front of a CRI runtime on a unix
// socket. It forwards every call unchanged, except those its rules stall:
// a stalled call is held until its caller's deadline passes.
type criProxy struct {
	t        *testing.T
	endpoint string // unix:///path of the proxy
	upstream *grpc.ClientConn
	srv      *grpc.Server

	mu      sync.Mutex
	rules   []*stallRule
	stalled map[string]int // method -> calls stalled
	late    map[string]int // method -> stalled calls carried out afterwards
	lateErr []error
	wg      sync.WaitGroup
}

// startCRIProxy serves the proxy on a socket in dir, forwarding to the
// runtime at upstream (unix:///path). It stops at cleanup.
func startCRIProxy(t *testing.T, dir, upstream string, rules ...*stallRule) *criProxy {
	t.Helper()
	conn, err := grpc.NewClient(upstream, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "proxy.sock")
	for i := 2; fileExists(sock); i++ { // a second proxy in the same directory
		sock = filepath.Join(dir, fmt.Sprintf("proxy%d.sock", i))
	}
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &criProxy{t: t, endpoint: "unix://" + sock, upstream: conn, rules: rules, stalled: map[string]int{}, late: map[string]int{}}
	p.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.handle))
	go func() { _ = p.srv.Serve(lis) }()
	t.Cleanup(func() {
		p.srv.Stop()
		p.wg.Wait()
		_ = conn.Close()
	})
	return p
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// counts returns how many calls of method were stalled and how many of
// those were carried out late.
func (p *criProxy) counts(method string) (stalled, late int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled[method], p.late[method]
}

// stall reports whether this call is to be stalled, and the rule.
func (p *criProxy) stall(method string, req []byte) *stallRule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if r.method == method && r.count > 0 && (r.match == nil || r.match(req)) {
			r.count--
			p.stalled[method]++
			return r
		}
	}
	return nil
}

func (p *criProxy) handle(_ any, stream grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(stream)
	if !ok {
		return status.Error(codes.Internal, "no method")
	}
	ctx := stream.Context()
	var req []byte
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if r := p.stall(method, req); r != nil {
		<-ctx.Done() // hung: the caller's deadline is the only way out
		if r.late {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var resp []byte
				err := p.upstream.Invoke(lctx, method, &req, &resp, grpc.ForceCodec(rawCodec{}))
				p.mu.Lock()
				p.late[method]++
				if err != nil {
					p.lateErr = append(p.lateErr, err)
				}
				p.mu.Unlock()
			}()
		}
		return status.FromContextError(ctx.Err()).Err()
	}
	var resp []byte
	if err := p.upstream.Invoke(metadata.NewOutgoingContext(ctx, md), method, &req, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
		return err
	}
	return stream.SendMsg(&resp)
}

// Methods the proxy's rules name.
const (
	methodRunPodSandbox   = "/runtime.v1.RuntimeService/RunPodSandbox"
	methodCreateContainer = "/runtime.v1.RuntimeService/CreateContainer"
	methodContainerStatus = "/runtime.v1.RuntimeService/ContainerStatus"
)

// podNamed matches the requests of method (RunPodSandbox or
// CreateContainer) that carry the named pod's sandbox metadata.
func podNamed(method, name string) func([]byte) bool {
	return func(req []byte) bool {
		switch method {
		case methodRunPodSandbox:
			var r runtimeapi.RunPodSandboxRequest
			return proto.Unmarshal(req, &r) == nil && r.GetConfig().GetMetadata().GetName() == name
		case methodCreateContainer:
			var r runtimeapi.CreateContainerRequest
			return proto.Unmarshal(req, &r) == nil && r.GetSandboxConfig().GetMetadata().GetName() == name
		}
		return false
	}
}
