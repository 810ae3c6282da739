package service

import (
	"context"
	"errors"
	"io"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// relay carries a streaming session between the caller and the executor
// once its first message went out: every caller message that forward
// turns into an executor message (ok false skips it) goes on until the
// caller is done, which half-closes the executor stream; every executor
// message goes back through back until the executor ends the session
// (nil) or fails (its error as a status). A caller message forward finds
// bad ends the session: cancel cuts the executor's stream, and the caller
// gets InvalidArgument naming the fields (op is the RPC's name).
func relay[CallerMsg, ExecMsg, ExecReply any](
	op string,
	cancel context.CancelFunc,
	recvCaller func() (CallerMsg, error),
	forward func(CallerMsg) (ExecMsg, bool, fielderr.Errors),
	sendExec func(ExecMsg) error,
	closeExec func() error,
	recvExec func() (ExecReply, error),
	back func(ExecReply) error,
) error {
	bad := make(chan error, 1)
	go func() {
		for {
			msg, err := recvCaller()
			if err != nil {
				_ = closeExec()
				return
			}
			m, ok, problems := forward(msg)
			if len(problems) > 0 {
				bad <- errgrpc.ToGRPCOp(op, problems)
				cancel()
				return
			}
			if !ok {
				continue
			}
			if err := sendExec(m); err != nil {
				return
			}
		}
	}()
	for {
		msg, err := recvExec()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			select {
			case b := <-bad:
				return b
			default:
			}
			return errgrpc.Relay("executor", err)
		}
		if err := back(msg); err != nil {
			return err
		}
	}
}

// inputProblems checks a later message of an exec or attach session: no
// second start, and bounded input.
func inputProblems(hasStart bool, in *syncpodv1.StreamInput) fielderr.Errors {
	var l fielderr.List
	if hasStart {
		l.Add("start", "only in the first message")
	}
	l.Append("", validation.StreamInputProblems("input", in))
	return l.Errors()
}
