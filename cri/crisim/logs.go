package crisim

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// maxLogLine is the longest line written as one CRI log entry; longer
// lines are split into partial (P) entries, as containerd does.
const maxLogLine = 16 * 1024

// logWriter appends CRI-format entries to a container's log file:
//
//	<RFC3339Nano time> <stdout|stderr> <F|P> <content>
//
// A logWriter with an empty path discards everything.
type logWriter struct {
	path string
	now  func() time.Time

	mu sync.Mutex
	f  *os.File
}

func openLog(path string, now func() time.Time) (*logWriter, error) {
	w := &logWriter{path: path, now: now}
	if path == "" {
		return w, nil
	}
	if err := w.reopen(); err != nil {
		return nil, err
	}
	return w, nil
}

// reopen closes the file and opens path again (creating it), for log
// rotation.
func (w *logWriter) reopen() error {
	if w.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		_ = w.f.Close()
	}
	w.f = f
	return nil
}

func (w *logWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// entry writes one log entry; full says whether it ends a line.
func (w *logWriter) entry(stream string, full bool, content []byte) {
	if w.path == "" {
		return // no log
	}
	tag := "P"
	if full {
		tag = "F"
	}
	ts := w.now().UTC().Format(time.RFC3339Nano)
	buf := make([]byte, 0, len(ts)+len(stream)+len(content)+5)
	buf = append(buf, ts...)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	buf = append(buf, tag...)
	buf = append(buf, ' ')
	buf = append(buf, content...)
	buf = append(buf, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		_, _ = w.f.Write(buf)
	}
}
