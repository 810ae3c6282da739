package termination

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
)

func TestAddTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msgFile := write("msg", "all done")
	empty := write("empty", "")
	big := write("big", strings.Repeat("x", 5000)+"END")
	var logLines []string
	for i := range 100 {
		logLines = append(logLines, fmt.Sprintf("2026-01-01T00:00:00Z stdout F line %03d", i))
	}
	logPath := write("0.log", strings.Join(logLines, "\n")+"\n2026-01-01T00:00:00Z stderr P part\n2026-01-01T00:00:00Z stderr F ial\n")
	status := func(policy, hostPath string, exit int32) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{
			State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: exit, LogPath: logPath,
			Annotations: map[string]string{crilabels.TerminationMessagePath: "/dev/termination-log", crilabels.TerminationMessagePolicy: policy},
			Mounts:      []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/nope"}, {ContainerPath: "/dev/termination-log", HostPath: hostPath}},
		}
	}
	for _, tc := range []struct {
		name string
		c    *runtimeapi.ContainerStatus
		want string
	}{
		{"file message", status("File", msgFile, 1), "all done"},
		{"file policy ignores logs", status("File", empty, 1), ""},
		{"fallback on error with empty file: log tail", status("FallbackToLogsOnError", empty, 2), "TAIL"},
		{"fallback with a message keeps it", status("FallbackToLogsOnError", msgFile, 2), "all done"},
		{"fallback needs a failure", status("FallbackToLogsOnError", empty, 0), ""},
		{"missing file falls back", status("FallbackToLogsOnError", filepath.Join(dir, "gone"), 2), "TAIL"},
		{"only the last 4096 bytes", status("File", big, 0), strings.Repeat("x", 4093) + "END"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			AddTerminationMessage(tc.c, ReadTail)
			want := tc.want
			if want == "TAIL" {
				var tail []string
				for i := 22; i < 100; i++ {
					tail = append(tail, fmt.Sprintf("line %03d\n", i))
				}
				want = strings.Join(tail, "") + "partial\n"
			}
			if tc.c.GetMessage() != want {
				t.Errorf("message %q\nwant %q", tc.c.GetMessage(), want)
			}
		})
	}
	running := status("File", msgFile, 0)
	running.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	AddTerminationMessage(running, ReadTail)
	if running.GetMessage() != "" {
		t.Errorf("running container got %q", running.GetMessage())
	}
	withRuntimeMsg := status("File", msgFile, 1)
	withRuntimeMsg.Message = "runtime says"
	AddTerminationMessage(withRuntimeMsg, ReadTail)
	if withRuntimeMsg.GetMessage() != "runtime says: all done" {
		t.Errorf("enriched %q", withRuntimeMsg.GetMessage())
	}
	failing := status("File", msgFile, 1)
	AddTerminationMessage(failing, func(string, int64) ([]byte, error) { return nil, errors.New("boom") })
	if !strings.HasPrefix(failing.GetMessage(), "Error on reading termination log ") {
		t.Errorf("read error: %q", failing.GetMessage())
	}
	gone := status("File", msgFile, 1)
	AddTerminationMessage(gone, func(string, int64) ([]byte, error) { return nil, fs.ErrNotExist })
	if gone.GetMessage() != "" {
		t.Errorf("missing file: %q", gone.GetMessage())
	}
}
