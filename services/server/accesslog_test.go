package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc/codes"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/syncpod/syncpod/internal/proctest"
)

func TestAccessLogLevel(t *testing.T) {
	for _, tc := range []struct {
		code codes.Code
		want logging.Level
	}{
		{codes.OK, logging.LevelDebug},
		{codes.NotFound, logging.LevelDebug},
		{codes.InvalidArgument, logging.LevelDebug},
		{codes.AlreadyExists, logging.LevelDebug},
		{codes.Canceled, logging.LevelDebug},
		{codes.DeadlineExceeded, logging.LevelWarn},
		{codes.Unavailable, logging.LevelWarn},
		{codes.FailedPrecondition, logging.LevelWarn},
		{codes.Internal, logging.LevelError},
		{codes.Unimplemented, logging.LevelError},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			if got := accessLogLevel(tc.code); got != tc.want {
				t.Errorf("accessLogLevel(%s) = %v, want %v", tc.code, got, tc.want)
			}
		})
	}
}

// TestAccessLogRoutineCallsAtDebug: a successful call writes its
// "finished call" line only when the log level is debug, so an info log
// is not buried under one line per RPC.
func TestAccessLogRoutineCallsAtDebug(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  bool
	}{
		{slog.LevelInfo, false},
		{slog.LevelDebug, true},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var out proctest.Buffer
			logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: tc.level}))
			r := runServer(t, Options{Logger: logger})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stream, err := reflectionpb.NewServerReflectionClient(r.conn).ServerReflectionInfo(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
				t.Fatal(err)
			}
			if _, err := stream.Recv(); err != nil {
				t.Fatal(err)
			}
			if err := stream.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if _, err := stream.Recv(); err == nil {
				t.Fatal("stream did not end after CloseSend")
			}
			// The line is written when the handler returns, which can be
			// just after the client saw the end of the stream: stop the
			// server, so every handler has returned, before reading.
			r.cancel()
			if err := r.wait(t, 10*time.Second); err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := strings.Contains(out.String(), "finished call")
			if got != tc.want {
				t.Errorf("level %s: \"finished call\" logged = %v, want %v; log:\n%s", tc.level, got, tc.want, out.String())
			}
		})
	}
}
