package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

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

// TestAccessLogWithoutDebugSameLine: with debug off the access log skips
// the middleware for calls that end at a level it does not log, and
// writes the line of one it logs (a failure) itself: the same fields as
// the middleware's line, which it writes with debug on.
func TestAccessLogWithoutDebugSameLine(t *testing.T) {
	line := func(level slog.Level) map[string]any {
		var out bytes.Buffer
		logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: level}))
		accessLog := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
			logger.Log(ctx, slog.Level(lvl), msg, fields...)
		})
		full := logging.UnaryServerInterceptor(accessLog, logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(accessLogLevel))
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		defer cancel()
		ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.UnixAddr{Name: "/run/x.sock", Net: "unix"}})
		info := &grpc.UnaryServerInfo{FullMethod: "/syncpod.test.v1.Test/Do"}
		_, err := accessLogUnary(logger, full)(ctx, struct{}{}, info, func(context.Context, any) (any, error) {
			return nil, status.Error(codes.Internal, "boom")
		})
		if status.Code(err) != codes.Internal {
			t.Fatalf("err = %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("level %s: one JSON line wanted: %v\n%s", level, err, out.String())
		}
		return m
	}
	debug, info := line(slog.LevelDebug), line(slog.LevelInfo)
	for _, m := range []map[string]any{debug, info} {
		delete(m, "time")
		delete(m, "grpc.time_ms")
		delete(m, "grpc.start_time")
	}
	if !reflect.DeepEqual(debug, info) {
		t.Errorf("the line differs:\n debug on:  %v\n debug off: %v", debug, info)
	}
	if info["grpc.code"] != "Internal" || info["grpc.method"] != "Do" || info["peer.address"] != "/run/x.sock" {
		t.Errorf("line = %v", info)
	}

	// A call that succeeds, with debug off: no line.
	var out bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	_, _ = accessLogUnary(logger, nil)(context.Background(), struct{}{}, &grpc.UnaryServerInfo{FullMethod: "/a.B/C"},
		func(context.Context, any) (any, error) { return struct{}{}, nil })
	if out.Len() != 0 {
		t.Errorf("a successful call logged with debug off: %s", out.String())
	}
}
