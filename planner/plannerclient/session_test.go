package plannerclient

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// overlapStream is an Exec client stream that notes when a send begins
// while another is still under way, which a gRPC stream does not allow.
type overlapStream struct {
	grpc.BidiStreamingClient[plannerv1.ExecRequest, plannerv1.ExecResponse]
	sending  atomic.Int32
	overlaps atomic.Int32
	sent     atomic.Int32
}

func (s *overlapStream) enter() func() {
	if s.sending.Add(1) > 1 {
		s.overlaps.Add(1)
	}
	time.Sleep(50 * time.Microsecond) // a send takes a while: widen the window
	return func() { s.sending.Add(-1) }
}

func (s *overlapStream) Send(*plannerv1.ExecRequest) error {
	defer s.enter()()
	s.sent.Add(1)
	return nil
}

func (s *overlapStream) CloseSend() error {
	defer s.enter()()
	return nil
}

// TestSessionSendsOneAtATime: standard input and terminal resizes are sent
// from goroutines of their own (syncpodctl, the node agent's streaming
// server); the session makes them take turns on the stream.
func TestSessionSendsOneAtATime(t *testing.T) {
	stream := &overlapStream{}
	call := func(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[plannerv1.ExecRequest, plannerv1.ExecResponse], error) {
		return stream, nil
	}
	s, err := open(t.Context(), call, &plannerv1.ExecRequest{Start: &plannerv1.ExecStart{}},
		func(in *syncpodv1.StreamInput) *plannerv1.ExecRequest { return &plannerv1.ExecRequest{Input: in} },
		(*plannerv1.ExecResponse).GetOutput)
	if err != nil {
		t.Fatal(err)
	}
	const senders, each = 4, 25
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for range each {
				_ = s.Send(&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Stdin{Stdin: []byte("x")}})
			}
			_ = s.CloseSend()
		})
	}
	wg.Wait()
	if n := stream.overlaps.Load(); n != 0 {
		t.Errorf("%d sends began while another was under way", n)
	}
	if got := stream.sent.Load(); got != 1+senders*each {
		t.Errorf("%d messages sent, want %d", got, 1+senders*each)
	}
}

// refusedStream is a stream the server ended before reading anything:
// every Send is io.EOF, and the status comes from receiving.
type refusedStream struct {
	grpc.BidiStreamingClient[plannerv1.ExecRequest, plannerv1.ExecResponse]
	status error
}

func (s *refusedStream) Send(*plannerv1.ExecRequest) error { return io.EOF }
func (s *refusedStream) RecvMsg(any) error                 { return s.status }

// A session the server refuses at once (PermissionDenied from its
// authorization, say) reports that status, not the io.EOF of the send
// that found the stream closed.
func TestARefusedSessionReportsTheServersStatus(t *testing.T) {
	denied := status.Error(codes.PermissionDenied, "CN=viewer may not exec")
	call := func(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[plannerv1.ExecRequest, plannerv1.ExecResponse], error) {
		return &refusedStream{status: denied}, nil
	}
	_, err := open(context.Background(), call, &plannerv1.ExecRequest{},
		func(*syncpodv1.StreamInput) *plannerv1.ExecRequest { return &plannerv1.ExecRequest{} },
		(*plannerv1.ExecResponse).GetOutput)
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("open = %v, want the server's PermissionDenied", err)
	}
	// A stream that ended cleanly keeps the io.EOF.
	if err := sendErr(&refusedStream{status: io.EOF}, io.EOF); !errors.Is(err, io.EOF) {
		t.Errorf("sendErr on a cleanly ended stream = %v, want io.EOF", err)
	}
}
