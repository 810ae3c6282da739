package runner

import (
	"context"
	"time"

	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

// maxExecOutput bounds what ExecSync returns of each stream.
const maxExecOutput = 16 << 10

// ExecSync runs a command in a running container and returns its exit
// code and (truncated) output. A command that exits non-zero is a result,
// not an error; NotFound, Unavailable and timeouts are errors.
func (r *Runner) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*executorv1.ExecSyncResponse, error) {
	stdout, stderr, err := r.rt.ExecSync(ctx, containerID, cmd, timeout)
	resp := &executorv1.ExecSyncResponse{Stdout: truncate(stdout), Stderr: truncate(stderr)}
	if code, ok := runtimeclient.ExitCode(err); ok {
		resp.ExitCode = code
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func truncate(b []byte) []byte {
	if len(b) > maxExecOutput {
		return b[:maxExecOutput]
	}
	return b
}
