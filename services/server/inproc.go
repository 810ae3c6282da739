package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Services that run in one process (syncpod-all) call one another without
// their sockets: a server given a Local (Options.Local) offers its
// services to the process's other services as well as on its unix
// socket, and a client connected by Service with the same Local calls a
// server of the process directly: the
// request and the answer are copied (proto.Clone), not encoded, framed
// over HTTP/2 and decoded, and the server's interceptors (metrics, access
// log, authorization and audit, panic recovery, the end of streams at
// shutdown) run as they do for a call on the socket. The caller is an
// InProcessPeer: a local peer, as a caller on the socket is, named
// "in-process:uid=U,pid=P" in the audit trail. Only unix-socket servers
// are offered (a TCP server's callers are identified by certificate); a
// server is offered from Run until its shutdown begins, and a call made
// while it is not goes to the socket, as it would without a Local.

// Local is the set of servers of one process that its other services
// call in-process. The zero value is not usable: NewLocal.
type Local struct {
	mu      sync.RWMutex
	servers map[string]*inprocgrpc.Channel
}

// NewLocal is an empty set.
func NewLocal() *Local { return &Local{servers: map[string]*inprocgrpc.Channel{}} }

// localKey is the key of a unix socket address ("" for any other): its
// cleaned path, so that a server and its clients agree on spelling.
func localKey(addr string) string {
	network, address, err := SplitAddress(addr)
	if err != nil || network != "unix" {
		return ""
	}
	if abs, err := filepath.Abs(address); err == nil {
		address = abs
	}
	return filepath.Clean(address)
}

func (l *Local) offer(key string, ch *inprocgrpc.Channel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.servers[key] = ch
}

func (l *Local) withdraw(key string, ch *inprocgrpc.Channel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.servers[key] == ch {
		delete(l.servers, key)
	}
}

func (l *Local) lookup(key string) *inprocgrpc.Channel {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.servers[key]
}

// Lookup is, for a client other than a Service connection (the CRI
// clients of a cri.Conn), the channel to the server of this process at
// addr: the function answers it while that server is offered, nil
// otherwise. Lookup of a nil Local, or of an address that is not a unix
// socket, is nil: always through the socket.
func (l *Local) Lookup(addr string) func() grpc.ClientConnInterface {
	key := localKey(addr)
	if l == nil || key == "" {
		return nil
	}
	return func() grpc.ClientConnInterface {
		if ch := l.lookup(key); ch != nil {
			return ch
		}
		return nil // not a typed nil
	}
}

// InProcessPeer is the AuthInfo of a caller in the server's own process.
type InProcessPeer struct {
	credentials.CommonAuthInfo
	UID, PID int
}

// AuthType names the kind of peer.
func (InProcessPeer) AuthType() string { return "in-process" }

func (p InProcessPeer) String() string {
	return "in-process:uid=" + strconv.Itoa(p.UID) + ",pid=" + strconv.Itoa(p.PID)
}

// inProcessAddr is the address of an in-process caller.
type inProcessAddr struct{}

func (inProcessAddr) Network() string { return "in-process" }
func (inProcessAddr) String() string  { return "in-process" }

var (
	inProcessPeer = InProcessPeer{
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
		UID:            os.Getuid(), PID: os.Getpid(),
	}
	inProcess = &peer.Peer{Addr: inProcessAddr{}, AuthInfo: inProcessPeer}
	// inProcessName is inProcessPeer's String, spelled out once rather
	// than on every in-process call's authorization.
	inProcessName = inProcessPeer.String()
)

var _ net.Addr = inProcessAddr{}

// inProcServer is a Server's in-process side.
type inProcServer struct {
	local *Local
	key   string
	ch    *inprocgrpc.Channel
	// cut ends the contexts of the in-process calls still running when
	// the graceful drain times out, as grpc.Server.Stop cuts those on
	// the socket.
	cut      context.Context
	cutCalls context.CancelFunc
	// mu guards active, the in-process calls running, and idle, closed
	// when they are none once a drain waits for it (a WaitGroup's Add
	// must not race its Wait, and calls may still begin while a drain
	// waits).
	mu     sync.Mutex
	active int
	idle   chan struct{}
}

// newInProcServer is the in-process side of a server with these
// interceptors (those of the socket, the decode check aside: nothing is
// decoded).
func newInProcServer(local *Local, key string, unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) *inProcServer {
	s := &inProcServer{local: local, key: key, ch: new(inprocgrpc.Channel).WithCloner(messageCloner{})}
	s.cut, s.cutCalls = context.WithCancel(context.Background())
	s.ch.WithServerUnaryInterceptor(chainUnary(append([]grpc.UnaryServerInterceptor{s.enterUnary}, unary...)))
	s.ch.WithServerStreamInterceptor(chainStream(append([]grpc.StreamServerInterceptor{s.enterStream}, stream...)))
	return s
}

// enter is the start of every in-process call: the caller made an
// InProcessPeer, the call counted for the drain and its context ended
// when the drain is cut.
func (s *inProcServer) enter(ctx context.Context) (context.Context, func()) {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(peer.NewContext(ctx, inProcess))
	stop := context.AfterFunc(s.cut, cancel)
	return ctx, func() { stop(); cancel(); s.leave() }
}

func (s *inProcServer) enterUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, done := s.enter(ctx)
	defer done()
	return handler(ctx, req)
}

func (s *inProcServer) enterStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, done := s.enter(ss.Context())
	defer done()
	return handler(srv, &streamWithContext{ServerStream: ss, ctx: ctx})
}

// leave is the end of an in-process call.
func (s *inProcServer) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// drained is closed once no in-process call runs.
func (s *inProcServer) drained() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(chan struct{})
	switch {
	case s.active == 0:
		close(c)
	case s.idle != nil:
		return s.idle
	default:
		s.idle = c
	}
	return c
}

// messageCloner copies the messages of in-process calls with the protobuf
// runtime's own Merge and Clone. (The channel's default goes through the
// older protobuf API and a dynamic-message merge on every copy, which
// costs as much again.)
type messageCloner struct{}

func (messageCloner) Copy(out, in any) error {
	o, okOut := out.(proto.Message)
	i, okIn := in.(proto.Message)
	if !okOut || !okIn {
		return status.Errorf(codes.Internal, "in-process call: cannot copy a %T into a %T: not protobuf messages", in, out)
	}
	if a, b := o.ProtoReflect().Descriptor().FullName(), i.ProtoReflect().Descriptor().FullName(); a != b {
		return status.Errorf(codes.Internal, "in-process call: cannot copy a %s into a %s", b, a)
	}
	proto.Reset(o)
	proto.Merge(o, i)
	return nil
}

func (messageCloner) Clone(in any) (any, error) {
	m, ok := in.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.Internal, "in-process call: cannot copy a %T: not a protobuf message", in)
	}
	return proto.Clone(m), nil
}

// chainUnary makes one interceptor of several, the first outermost.
func chainUnary(ints []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var next func(i int) grpc.UnaryHandler
		next = func(i int) grpc.UnaryHandler {
			if i == len(ints) {
				return handler
			}
			return func(ctx context.Context, req any) (any, error) { return ints[i](ctx, req, info, next(i+1)) }
		}
		return next(0)(ctx, req)
	}
}

// chainStream is chainUnary for streams.
func chainStream(ints []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		var next func(i int) grpc.StreamHandler
		next = func(i int) grpc.StreamHandler {
			if i == len(ints) {
				return handler
			}
			return func(srv any, ss grpc.ServerStream) error { return ints[i](srv, ss, info, next(i+1)) }
		}
		return next(0)(srv, ss)
	}
}

// registrar registers a service on the gRPC server and on the in-process
// channel.
type registrar struct{ s *Server }

func (r registrar) RegisterService(desc *grpc.ServiceDesc, impl any) {
	r.s.grpc.RegisterService(desc, impl)
	if r.s.inproc != nil {
		r.s.inproc.ch.RegisterService(desc, impl)
	}
}

// Service makes a lazy connection to the syncpod service at addr, as
// d.Dial does, that calls it in-process while it runs in this process and
// is offered in local (nil: always through the socket).
func Service(d DialPolicy, local *Local, addr string, opts ...grpc.DialOption) (*Conn, error) {
	cc, err := d.Dial(addr, opts...)
	if err != nil {
		return nil, err
	}
	return &Conn{cc: cc, local: local, key: localKey(addr)}, nil
}

// Conn is a client connection to a syncpod service: in-process to a
// server of the same process while it is offered there (see Local),
// through the socket otherwise.
type Conn struct {
	cc    *grpc.ClientConn
	local *Local
	key   string
}

var _ grpc.ClientConnInterface = (*Conn)(nil)

// Invoke makes a unary call.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if ch := c.inProcess(); ch != nil {
		return ch.Invoke(ctx, method, args, reply, opts...)
	}
	return c.cc.Invoke(ctx, method, args, reply, opts...)
}

// NewStream opens a stream.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if ch := c.inProcess(); ch != nil {
		return ch.NewStream(ctx, desc, method, opts...)
	}
	return c.cc.NewStream(ctx, desc, method, opts...)
}

func (c *Conn) inProcess() *inprocgrpc.Channel {
	if c.local == nil || c.key == "" {
		return nil
	}
	return c.local.lookup(c.key)
}

// Close closes the socket connection.
func (c *Conn) Close() error { return c.cc.Close() }
