package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Services that run in one process (syncpod-all) call one another without
// their sockets: a server given a Local (Options.Local) offers its
// services to the process's other services as well as on its unix
// socket, and a client connected by Service with the same Local calls a
// server of the process directly (so does a client given Lookup's
// channel: the CRI clients of crisim's executor and PLEG): the request and
// the answer are copied (proto.Merge), not encoded, framed over HTTP/2 and
// decoded, a unary call's handler runs in the caller's goroutine, a
// stream's in one of its own, and the server's interceptors (metrics, access
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
	servers map[string]*inProcServer
}

// NewLocal is an empty set.
func NewLocal() *Local { return &Local{servers: map[string]*inProcServer{}} }

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

func (l *Local) offer(key string, s *inProcServer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.servers[key] = s
}

func (l *Local) withdraw(key string, s *inProcServer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.servers[key] == s {
		delete(l.servers, key)
	}
}

func (l *Local) lookup(key string) *inProcServer {
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

// inProcServer is a Server's in-process side: its streams go through an
// in-process channel, its unary calls straight to the handler (invoke).
type inProcServer struct {
	local *Local
	key   string
	ch    *inprocgrpc.Channel
	// unary is the chain of the unary calls' interceptors; methods are
	// the unary methods registered, by full name (written while the
	// services are registered, before the server is offered).
	unary   grpc.UnaryServerInterceptor
	methods map[string]unaryMethod
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
	s := &inProcServer{local: local, key: key, ch: new(inprocgrpc.Channel).WithCloner(messageCloner{}), methods: map[string]unaryMethod{}}
	s.cut, s.cutCalls = context.WithCancel(context.Background())
	s.unary = chainUnary(append([]grpc.UnaryServerInterceptor{s.enterUnary}, unary...))
	s.ch.WithServerUnaryInterceptor(s.unary)
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
		r.s.inproc.register(desc, impl)
	}
}

// unaryMethod is a unary method's handler and the service it calls.
type unaryMethod struct {
	impl    any
	handler grpc.MethodHandler
}

// register puts a service on the in-process side.
func (s *inProcServer) register(desc *grpc.ServiceDesc, impl any) {
	s.ch.RegisterService(desc, impl)
	for _, m := range desc.Methods {
		s.methods["/"+desc.ServiceName+"/"+m.MethodName] = unaryMethod{impl: impl, handler: m.Handler}
	}
}

// Invoke makes a unary call in the caller's goroutine: the request copied
// into the handler's message, the handler run through the interceptors
// with a context that has the caller's deadline, cancellation and
// metadata but none of its values (as the in-process channel gives its
// calls), the answer copied out. The call returns when the handler does.
// (The channel's unary calls each start a goroutine for the handler and
// grow its stack: a profile of many nodes in one process put a few
// percent of its CPU there.)
func (s *inProcServer) Invoke(ctx context.Context, method string, req, reply any, opts ...grpc.CallOption) error {
	m, ok := s.methods[method]
	if !ok {
		return s.ch.Invoke(ctx, method, req, reply, opts...)
	}
	if err := ctx.Err(); err != nil {
		// As a client on the socket: a call already canceled is not made.
		return status.FromContextError(err).Err()
	}
	v, err := m.handler(m.impl, serverContext(ctx, method), func(in any) error { return messageCloner{}.Copy(in, req) }, s.unary)
	if err != nil {
		return err
	}
	if rv := reflect.ValueOf(v); v == nil || rv.Kind() == reflect.Pointer && rv.IsNil() {
		return status.Errorf(codes.Internal, "%s: the handler returned neither an error nor an answer", method)
	}
	return messageCloner{}.Copy(reply, v)
}

// NewStream opens a stream through the in-process channel.
func (s *inProcServer) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return s.ch.NewStream(ctx, desc, method, opts...)
}

var _ grpc.ClientConnInterface = (*inProcServer)(nil)

// serverContext is the context of an in-process unary call's handler:
// ctx's deadline and cancellation, its outgoing metadata as incoming,
// none of its values, and the method for grpc.Method.
func serverContext(ctx context.Context, method string) context.Context {
	sctx := context.Context(noValues{ctx})
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		sctx = metadata.NewIncomingContext(sctx, md)
	}
	return grpc.NewContextWithServerTransportStream(sctx, unaryStream(method))
}

// noValues is a context's deadline and cancellation without its values.
type noValues struct{ context.Context }

func (noValues) Value(any) any { return nil }

// unaryStream is the transport stream of an in-process unary call: it
// names the method; headers and trailers, which no syncpod service sets,
// cannot be carried.
type unaryStream string

var errNoHeaders = status.Error(codes.Internal, "in-process calls carry no headers or trailers")

func (m unaryStream) Method() string             { return string(m) }
func (unaryStream) SetHeader(metadata.MD) error  { return errNoHeaders }
func (unaryStream) SendHeader(metadata.MD) error { return errNoHeaders }
func (unaryStream) SetTrailer(metadata.MD) error { return errNoHeaders }

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

func (c *Conn) inProcess() *inProcServer {
	if c.local == nil || c.key == "" {
		return nil
	}
	return c.local.lookup(c.key)
}

// Close closes the socket connection.
func (c *Conn) Close() error { return c.cc.Close() }
