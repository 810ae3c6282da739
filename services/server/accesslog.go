package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// accessLogLevel is the level of a call's "finished call" line. Routine
// outcomes (OK, and the answers a client asked for: NotFound,
// AlreadyExists, InvalidArgument, Canceled, Unauthenticated) are debug: a
// node answers hundreds of calls a minute and its info log is for what
// changes. Everything else keeps the middleware's server default (warn
// for DeadlineExceeded, Unavailable, FailedPrecondition, ...; error for
// Internal, Unknown, Unimplemented, DataLoss).
func accessLogLevel(code codes.Code) logging.Level {
	if l := logging.DefaultServerCodeToLevel(code); l != logging.LevelInfo {
		return l
	}
	return logging.LevelDebug
}

// The access log: each call's "finished call" line at accessLogLevel.
// With debug on, the middleware's interceptor writes it (with every
// field it gathers, the calls' contexts carrying them). With debug off,
// which is how a node normally runs, most calls end at a level that is
// not logged, and the middleware would still build every field of every
// call (start time, peer address, formatted strings: allocations on each
// call of a busy node) only for the handler to drop the line: these skip
// the middleware, time the call themselves and build the same line only
// when its level is enabled.

func accessLogUnary(logger *slog.Logger, full grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if logger.Enabled(ctx, slog.LevelDebug) {
			return full(ctx, req, info, handler)
		}
		start := time.Now()
		resp, err := handler(ctx, req)
		finishedCall(ctx, logger, info.FullMethod, nil, start, err)
		return resp, err
	}
}

func accessLogStream(logger *slog.Logger, full grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		if logger.Enabled(ctx, slog.LevelDebug) {
			return full(srv, ss, info, handler)
		}
		start := time.Now()
		err := handler(srv, ss)
		finishedCall(ctx, logger, info.FullMethod, info, start, err)
		return err
	}
}

// finishedCall writes the call's "finished call" line, with the fields
// the middleware gives it, when its level is enabled.
// stream is nil for a unary call.
func finishedCall(ctx context.Context, logger *slog.Logger, fullMethod string, stream *grpc.StreamServerInfo, start time.Time, err error) {
	code := status.Code(err)
	lvl := slog.Level(accessLogLevel(code))
	if !logger.Enabled(ctx, lvl) {
		return
	}
	meta := interceptors.NewServerCallMeta(fullMethod, stream, nil)
	args := []any{
		logging.SystemTag[0], logging.SystemTag[1],
		logging.ComponentFieldKey, logging.KindServerFieldValue,
		logging.ServiceFieldKey, meta.Service,
		logging.MethodFieldKey, meta.Method,
		logging.MethodTypeFieldKey, string(meta.Typ),
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		args = append(args, "peer.address", p.Addr.String())
	}
	args = append(args, "grpc.start_time", start.Format(time.RFC3339))
	if d, ok := ctx.Deadline(); ok {
		args = append(args, "grpc.request.deadline", d.Format(time.RFC3339))
	}
	args = append(args, "grpc.code", code.String())
	if err != nil {
		args = append(args, "grpc.error", fmt.Sprintf("%v", err))
	}
	args = append(args, logging.DurationToTimeMillisFields(time.Since(start))...)
	logger.Log(ctx, lvl, "finished call", args...)
}
