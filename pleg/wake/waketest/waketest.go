// Package waketest is a fake of containerd's Events service for tests of
// the PLEG's wake-ups (package wake): an in-memory gRPC server whose
// subscribers receive the envelopes a test sends, and whose streams a
// test can end.
package waketest

import (
	"context"
	"sync"
	"testing"

	eventsapi "github.com/containerd/containerd/api/services/events/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/syncpod/syncpod/internal/grpctest"
)

// Server is the fake Events service. It does not apply the subscribers'
// filters: every envelope goes to every open stream.
type Server struct {
	eventsapi.UnimplementedEventsServer

	mu            sync.Mutex
	unimplemented bool
	streams       map[*stream]bool
	subscribed    int
	filters       []string
	changed       chan struct{} // closed and replaced when streams change
}

type stream struct {
	envs chan *eventsapi.Envelope
	end  chan error
}

// Start serves a fake on an in-memory listener until the test ends and
// returns it with a client connection to it. unimplemented: every
// Subscribe is answered codes.Unimplemented, as by a runtime without the
// service.
func Start(t testing.TB, unimplemented bool) (*Server, *grpc.ClientConn) {
	t.Helper()
	s := &Server{unimplemented: unimplemented, streams: map[*stream]bool{}, changed: make(chan struct{})}
	conn := grpctest.Serve(t, func(srv *grpc.Server) { eventsapi.RegisterEventsServer(srv, s) })
	return s, conn
}

// Subscribe is the service's method: it sends what Send sends until End
// ends the stream or the client goes.
func (s *Server) Subscribe(req *eventsapi.SubscribeRequest, srv eventsapi.Events_SubscribeServer) error {
	st := &stream{envs: make(chan *eventsapi.Envelope, 1024), end: make(chan error, 1)}
	s.mu.Lock()
	if s.unimplemented {
		s.subscribed++
		s.notifyLocked()
		s.mu.Unlock()
		return status.Error(codes.Unimplemented, "unknown service containerd.services.events.v1.Events")
	}
	s.streams[st] = true
	s.subscribed++
	s.filters = req.GetFilters()
	s.notifyLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, st)
		s.notifyLocked()
		s.mu.Unlock()
	}()
	for {
		select {
		case <-srv.Context().Done():
			return srv.Context().Err()
		case err := <-st.end:
			return err
		case env := <-st.envs:
			if err := srv.Send(env); err != nil {
				return err
			}
		}
	}
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Send sends an envelope of namespace and topic to every open stream.
func (s *Server) Send(namespace, topic string) {
	s.SendEvent(namespace, topic, nil)
}

// SendEvent sends an envelope of namespace and topic carrying event (none
// when nil) to every open stream.
func (s *Server) SendEvent(namespace, topic string, event *anypb.Any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.streams {
		st.envs <- &eventsapi.Envelope{Namespace: namespace, Topic: topic, Event: event}
	}
}

// End ends every open stream with err (nil: codes.Unavailable).
func (s *Server) End(err error) {
	if err == nil {
		err = status.Error(codes.Unavailable, "events service going away")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.streams {
		st.end <- err
	}
}

// WaitStreams waits until n streams are open and Subscribe was called at
// least subscribed times in all, or ctx is done (false).
func (s *Server) WaitStreams(ctx context.Context, n, subscribed int) bool {
	for {
		s.mu.Lock()
		ok := len(s.streams) == n && s.subscribed >= subscribed
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// Subscribed is how many times Subscribe was called, and the filters of
// the last call.
func (s *Server) Subscribed() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subscribed, s.filters
}
