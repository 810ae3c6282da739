package server

import (
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc/codes"
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
