package service

import (
	"errors"
	"io"
)

// relay carries a streaming session between the caller and the executor
// once its first message went out: every caller message that forward
// turns into an executor message (ok false skips it) goes on until the
// caller is done, which half-closes the executor stream; every executor
// message goes back through back until the executor ends the session
// (nil) or fails (its error as a status).
func relay[CallerMsg, ExecMsg, ExecReply any](
	recvCaller func() (CallerMsg, error),
	forward func(CallerMsg) (ExecMsg, bool),
	sendExec func(ExecMsg) error,
	closeExec func() error,
	recvExec func() (ExecReply, error),
	back func(ExecReply) error,
) error {
	go func() {
		for {
			msg, err := recvCaller()
			if err != nil {
				_ = closeExec()
				return
			}
			m, ok := forward(msg)
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
			return executorStatus(err)
		}
		if err := back(msg); err != nil {
			return err
		}
	}
}
