package termination

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
)

// Limits of termination messages, the kubelet's.
const (
	// MaxTerminationMessage is how much of the message file is read (its
	// end).
	MaxTerminationMessage = 4096
	// MaxTerminationLogBytes and MaxTerminationLogLines bound the log tail
	// used by FallbackToLogsOnError.
	MaxTerminationLogBytes = 2048
	MaxTerminationLogLines = 80
)

// TailReader reads at most max bytes from the end of the file at path.
type TailReader func(path string, max int64) ([]byte, error)

// ReadTail is the TailReader of the local file system.
func ReadTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max64(st.Size()-max, 0)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, max))
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// AddTerminationMessage appends an exited container's termination message
// to c.Message, as the kubelet does: the end of the file mounted at the
// path its annotation names (at most MaxTerminationMessage bytes); with
// FallbackToLogsOnError, a non-zero exit and no message, the tail of its
// log instead. Other containers are left alone. c is modified.
func AddTerminationMessage(c *runtimeapi.ContainerStatus, read TailReader) {
	if c == nil || c.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return
	}
	path := c.GetAnnotations()[crilabels.TerminationMessagePath]
	fallback := c.GetAnnotations()[crilabels.TerminationMessagePolicy] == "FallbackToLogsOnError" &&
		c.GetExitCode() != 0 && c.GetReason() != "ContainerCannotRun"
	msg, checkLogs := "", fallback
	for _, m := range c.GetMounts() {
		if path == "" || m.GetContainerPath() != path {
			continue
		}
		data, err := read(m.GetHostPath(), MaxTerminationMessage)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			msg, checkLogs = fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err), false
		default:
			msg, checkLogs = string(data), fallback && len(data) == 0
		}
		break
	}
	if checkLogs && c.GetLogPath() != "" {
		msg = logTail(c.GetLogPath(), read)
	}
	if msg == "" {
		return
	}
	if c.Message != "" {
		c.Message += ": "
	}
	c.Message += msg
}

// logTail is the message part of the last MaxTerminationLogLines lines of
// a CRI-format log, at most MaxTerminationLogBytes (the end), as the
// kubelet's readLastStringFromContainerLogs.
func logTail(path string, read TailReader) string {
	// Read generously: the prefixes of CRI lines are dropped.
	data, err := read(path, 16*MaxTerminationLogBytes)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	lines := bytes.Split(data, []byte("\n"))
	var msgs []string
	for _, l := range lines {
		// "<time> <stream> <P|F> <message>"
		parts := bytes.SplitN(l, []byte(" "), 4)
		if len(parts) != 4 {
			continue
		}
		m := string(parts[3])
		if string(parts[2]) == "F" {
			m += "\n"
		}
		msgs = append(msgs, m)
	}
	// A partial first line (read mid-file) is not a whole line.
	if len(data) >= 16*MaxTerminationLogBytes && len(msgs) > 0 {
		msgs = msgs[1:]
	}
	if len(msgs) > MaxTerminationLogLines {
		msgs = msgs[len(msgs)-MaxTerminationLogLines:]
	}
	out := strings.Join(msgs, "")
	if len(out) > MaxTerminationLogBytes {
		out = out[len(out)-MaxTerminationLogBytes:]
	}
	return out
}
