package runner

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/syncpod/syncpod/executor/runtimeclient"
)

func TestExecSyncReportsExitCodesAsResults(t *testing.T) {
	e := newEnv(t)
	e.rt.ExecFunc = func(id string, cmd []string) (int32, []byte, error) {
		switch cmd[0] {
		case "true":
			return 0, []byte("ok"), nil
		case "false":
			return 3, nil, nil
		}
		return 0, nil, runtimeclient.ErrNotFound
	}
	resp, err := e.r.ExecSync(context.Background(), "c1", []string{"true"}, time.Second)
	if err != nil || resp.GetExitCode() != 0 || !bytes.Equal(resp.GetStdout(), []byte("ok")) {
		t.Fatalf("true: %v %v", resp, err)
	}
	resp, err = e.r.ExecSync(context.Background(), "c1", []string{"false"}, time.Second)
	if err != nil || resp.GetExitCode() != 3 {
		t.Fatalf("false: %v %v; want exit code 3 as a result", resp, err)
	}
	if _, err := e.r.ExecSync(context.Background(), "gone", []string{"x"}, time.Second); !errors.Is(err, runtimeclient.ErrNotFound) {
		t.Fatalf("missing container: %v, want ErrNotFound", err)
	}
}
