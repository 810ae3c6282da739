package service

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// ValidatePortForwardStart checks the first message of a PortForward
// session, every problem at once.
func ValidatePortForwardStart(start *executorv1.PortForwardStart) error {
	var l fielderr.List
	if start == nil {
		l.Add("start", "required in the first message")
		return l.Err()
	}
	if start.GetPodUid() == "" {
		l.Add("start.pod_uid", "required")
	} else if n := len(start.GetPodUid()); n > validation.MaxIDLen {
		l.Add("start.pod_uid", "%d bytes exceed the limit of %d", n, validation.MaxIDLen)
	}
	if start.GetPort() < 1 || start.GetPort() > 65535 {
		l.Add("start.port", "must be 1-65535, got %d", start.GetPort())
	}
	return l.Err()
}

// PortForward carries one connection to a pod's port. The runtime's
// streaming URL is served by client-go's port forwarder on a private
// loopback port for the length of the connection, and the gRPC stream is
// joined to one connection through it.
func (s *Service) PortForward(stream executorv1.ExecutorService_PortForwardServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	var l fielderr.List
	l.Append("", fielderr.As(ValidatePortForwardStart(start)))
	l.Append("", validation.StreamDataProblems("data", first.GetData()))
	if l.Len() > 0 {
		return errgrpc.ToGRPC(l.Err())
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	rs, ctx, err := s.criService(ctx)
	if err != nil {
		return errgrpc.ToGRPC(classify(err))
	}
	sbs, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{crilabels.PodUID: start.GetPodUid()},
	})
	if err != nil {
		return errgrpc.ToGRPC(classify(err))
	}
	if len(sbs) == 0 {
		return errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrFailedPrecondition, "pod %s has no ready sandbox", start.GetPodUid()))
	}
	newest := sbs[0]
	for _, sb := range sbs[1:] {
		if sb.GetCreatedAt() > newest.GetCreatedAt() {
			newest = sb
		}
	}
	resp, err := rs.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: newest.GetId(), Port: []int32{start.GetPort()}})
	if err != nil {
		return errgrpc.ToGRPC(classify(err))
	}
	conn, stop, err := dialThroughForwarder(ctx, resp.GetUrl(), start.GetPort())
	if err != nil {
		return errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrUnavailable, "port-forward to pod %s port %d: %v", start.GetPodUid(), start.GetPort(), err))
	}
	defer stop()
	defer conn.Close()
	s.log.Debug("port-forward", "pod_uid", start.GetPodUid(), "port", start.GetPort(), "sandbox_id", newest.GetId())
	if _, err := conn.Write(first.GetData()); err != nil {
		return errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrUnavailable, "port-forward connection: %v", err))
	}
	// Caller -> pod.
	bad := make(chan error, 1) // a bad message ends the connection
	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				_ = conn.(*net.TCPConn).CloseWrite()
				return
			}
			var l fielderr.List
			if msg.GetStart() != nil {
				l.Add("start", "only in the first message")
			}
			l.Append("", validation.StreamDataProblems("data", msg.GetData()))
			if l.Len() > 0 {
				bad <- errgrpc.ToGRPC(l.Err())
				cancel()
				return
			}
			if _, err := conn.Write(msg.GetData()); err != nil {
				cancel()
				return
			}
		}
	}()
	// Pod -> caller, until the pod closes the connection.
	buf := make([]byte, 32<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if serr := stream.Send(&executorv1.PortForwardResponse{Data: append([]byte(nil), buf[:n]...)}); serr != nil {
				return serr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			select {
			case b := <-bad:
				return b
			default:
			}
			if ctx.Err() != nil {
				return errgrpc.ToGRPC(ctx.Err())
			}
			return errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrUnavailable, "port-forward connection: %v", err))
		}
	}
}

// dialThroughForwarder starts client-go's port forwarder for one remote
// port of a CRI streaming URL on a loopback port and connects to it.
func dialThroughForwarder(ctx context.Context, rawURL string, port int32) (net.Conn, func(), error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("the runtime's streaming URL %q: %w", rawURL, err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		return nil, nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stopCh, ready := make(chan struct{}), make(chan struct{})
	var out, errOut bytes.Buffer
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(int(port))}, stopCh, ready, &out, &errOut)
	if err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	stop := func() {
		close(stopCh)
		<-done
	}
	select {
	case <-ready:
	case err := <-done:
		return nil, nil, fmt.Errorf("%v (%s)", err, errOut.String())
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		stop()
		return nil, nil, fmt.Errorf("forwarder ports %v: %v", ports, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
	if err != nil {
		stop()
		return nil, nil, err
	}
	return conn, stop, nil
}
