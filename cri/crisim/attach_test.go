package crisim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// liveAttach is an attach session running in the background, its output
// read as it comes.
type liveAttach struct {
	mu        sync.Mutex
	out, errb bytes.Buffer
	in        *io.PipeWriter // nil without stdin
	cancel    context.CancelFunc
	done      chan error
}

func (a *liveAttach) outputs() (string, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.String(), a.errb.String()
}

// waitFor waits until the session's stdout and stderr end with out and
// errOut.
func (a *liveAttach) waitFor(t *testing.T, out, errOut string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		o, e := a.outputs()
		if strings.HasSuffix(o, out) && strings.HasSuffix(e, errOut) {
			return
		}
		select {
		case err := <-a.done:
			t.Fatalf("the attach session ended (%v) with stdout %q stderr %q, want them to end with %q and %q", err, o, e, out, errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("attach: stdout %q stderr %q, want them to end with %q and %q", o, e, out, errOut)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// attachLive opens an attach session to id (with stdin when withStdin)
// through client-go's SPDY executor. A session with stdin is subscribed
// to the output before its input goes in; one without may miss the
// output of the first moments.
func attachLive(t *testing.T, r *Runtime, id string, withStdin bool) *liveAttach {
	t.Helper()
	ex := attachTo(t, r, &runtimeapi.AttachRequest{ContainerId: id, Stdin: withStdin, Stdout: true, Stderr: true})
	a := &liveAttach{done: make(chan error, 1)}
	opts := remotecommand.StreamOptions{Stdout: lockedWriter{&a.mu, &a.out}, Stderr: lockedWriter{&a.mu, &a.errb}}
	if withStdin {
		var in *io.PipeReader
		in, a.in = io.Pipe()
		opts.Stdin = in
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	t.Cleanup(cancel)
	go func() { a.done <- ex.StreamWithContext(ctx, opts) }()
	return a
}

// startWithoutLog creates a container with stdin and stdinOnce and no log
// path (a sandbox with no log directory), and starts it.
func startWithoutLog(t *testing.T, r *Runtime, name string, cmd []string) string {
	t.Helper()
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "img"}, Command: cmd,
		Stdin: true, StdinOnce: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.GetContainerId()}); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, r, resp.GetContainerId()); st.GetLogPath() != "" {
		t.Fatalf("the container has log path %q, want none", st.GetLogPath())
	}
	return resp.GetContainerId()
}

// longStateDir is a state directory whose sockets' paths are too long
// for a socket address, so they are bound through the directory's
// descriptor.
func longStateDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Attach shows the container's own output as the process writes it (a
// prompt without a newline shows), stdout and stderr apart, and writes to
// its input, for a container created without a log path, run by crisim
// itself or by a shim (whose socket is reached also when its path is too
// long for a socket address); the session ends with the container.
func TestAttachWithoutALogPath(t *testing.T) {
	for _, shim := range []bool{false, true} {
		name := map[bool]string{false: "crisim", true: "shim"}[shim]
		t.Run(name, func(t *testing.T) {
			var r *Runtime
			if shim {
				r = persistent(t, ModeProcess, longStateDir(t))
			} else {
				r, _ = newTestRuntime(t, Options{Mode: ModeProcess})
			}
			serveStreams(t, r)
			id := startWithoutLog(t, r, "nolog", []string{"sh", "-c", `while read l; do echo "got $l"; echo "seen $l" >&2; printf '> '; done; exit 4`})
			a := attachLive(t, r, id, true)
			if _, err := a.in.Write([]byte("one\n")); err != nil {
				t.Fatal(err)
			}
			a.waitFor(t, "got one\n> ", "seen one\n")
			if _, err := a.in.Write([]byte("two\n")); err != nil {
				t.Fatal(err)
			}
			a.waitFor(t, "got two\n> ", "seen two\n")
			_ = a.in.Close() // stdinOnce: the input ends, and the container
			if err := <-a.done; err != nil {
				t.Fatalf("attach: %v", err)
			}
			if st := waitExited(t, r, id); st.GetExitCode() != 4 {
				t.Fatalf("the container exited %d, want 4 (its input closed)", st.GetExitCode())
			}
			if out, errOut := a.outputs(); out != "got one\n> got two\n> " || errOut != "seen one\nseen two\n" {
				t.Fatalf("stdout %q stderr %q", out, errOut)
			}
		})
	}
}

// Every open attach session and the log get the same output: a session
// without stdin sees what another's input caused, and the log has it as
// entries.
func TestAttachSessionsAndTheLogShareTheOutput(t *testing.T) {
	for _, shim := range []bool{false, true} {
		name := map[bool]string{false: "crisim", true: "shim"}[shim]
		t.Run(name, func(t *testing.T) {
			var r *Runtime
			if shim {
				r = persistent(t, ModeProcess, t.TempDir())
			} else {
				r, _ = newTestRuntime(t, Options{Mode: ModeProcess})
			}
			serveStreams(t, r)
			sb := sandboxFor(t, r, "shared")
			id := startStdioContainer(t, r, sb, "echo", []string{"sh", "-c", `while read l; do echo "line $l"; echo "err $l" >&2; done`}, false)
			watcher := attachLive(t, r, id, false)
			writer := attachLive(t, r, id, true)
			// Typed until the watcher, whose subscription nothing shows,
			// sees it.
			deadline := time.Now().Add(20 * time.Second)
			for {
				if _, err := writer.in.Write([]byte("x\n")); err != nil {
					t.Fatal(err)
				}
				if out, _ := watcher.outputs(); strings.Contains(out, "line x\n") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the session without input never saw the output")
				}
				time.Sleep(20 * time.Millisecond)
			}
			writer.waitFor(t, "line x\n", "err x\n")
			watcher.waitFor(t, "line x\n", "err x\n")
			_ = writer.in.Close()
			for _, a := range []*liveAttach{writer, watcher} {
				if err := <-a.done; err != nil {
					t.Fatalf("attach: %v", err)
				}
			}
			waitExited(t, r, id)
			logged, err := os.ReadFile(statusOf(t, r, id).GetLogPath())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(logged), " stdout F line x\n") || !strings.Contains(string(logged), " stderr F err x\n") {
				t.Fatalf("the log lacks the output:\n%s", logged)
			}
		})
	}
}

// A crisim restarted while a shim runs the container attaches to its
// output through the shim's socket (the input stayed with the crisim
// before: output only).
func TestAttachAfterRestart(t *testing.T) {
	dir := t.TempDir()
	r1 := persistent(t, ModeProcess, dir)
	sb := sandboxFor(t, r1, "p")
	id := startIn(t, r1, sb, "ticker", []string{"sh", "-c", `while :; do echo tick; sleep 0.05; done`})
	leave(r1)
	r2 := persistent(t, ModeProcess, dir)
	serveStreams(t, r2)
	if _, err := r2.Attach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true}); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("attach with stdin after a restart: %v", err)
	}
	a := attachLive(t, r2, id, false)
	a.waitFor(t, "tick\ntick\n", "")
	a.cancel()
	<-a.done
}

// The hub writes the log as the CRI log format wants it however the
// output was read: a line per full entry, a line longer than maxLogLine
// in partial entries, the unended last one partial.
func TestOutputHubLogEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	lw, err := openLog(path, func() time.Time { return time.Unix(0, 0) })
	if err != nil {
		t.Fatal(err)
	}
	hub := newOutputHub(lw)
	long := strings.Repeat("a", 2*maxLogLine+5)
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() { hub.pump(frameStdout, pr); close(done) }()
	text := "short\n" + long + "\nlast"
	for i := 0; i < len(text); i += 1000 { // reads that end mid-line
		if _, err := pw.Write([]byte(text[i:min(i+1000, len(text))])); err != nil {
			t.Fatal(err)
		}
	}
	_ = pw.Close()
	<-done
	lw.close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(0, 0).UTC().Format(time.RFC3339Nano)
	want := ts + " stdout F short\n" +
		ts + " stdout P " + long[:maxLogLine] + "\n" +
		ts + " stdout P " + long[:maxLogLine] + "\n" +
		ts + " stdout F aaaaa\n" +
		ts + " stdout P last\n"
	if string(b) != want {
		t.Fatalf("log:\n%.300s\nwant:\n%.300s", b, want)
	}
}

// A session that does not keep up is ended, not waited for: the output
// goes on to the log and to the other sessions.
func TestOutputHubEndsASessionThatFallsBehind(t *testing.T) {
	hub := newOutputHub(&logWriter{now: time.Now})
	slow, fast := hub.subscribe(), hub.subscribe()
	// The fast session reads every chunk as it comes; the slow one none.
	for i := range attachBuffer + 1 {
		hub.write(frameStdout, []byte{byte(i)})
		if c, err := fast.next(); err != nil || c.data[0] != byte(i) {
			t.Fatalf("chunk %d to the session that keeps up: %v %v", i, c.data, err)
		}
	}
	hub.end()
	if _, err := fast.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("the session that kept up, after the end: %v, want EOF", err)
	}
	n := 0
	for {
		_, err := slow.next()
		if err != nil {
			if !errors.Is(err, errAttachBehind) {
				t.Fatalf("the slow session ended with %v, want errAttachBehind", err)
			}
			break
		}
		n++
	}
	if n != attachBuffer {
		t.Fatalf("the slow session got %d chunks before it was ended, want %d", n, attachBuffer)
	}
}

// A shim's attach socket (here at a path too long for a socket address)
// carries the chunks, stream by stream, and the end of the output, and is
// gone once closed.
func TestAttachSocket(t *testing.T) {
	hub := newOutputHub(&logWriter{now: time.Now})
	path := filepath.Join(longStateDir(t), "c.attach.sock")
	srv, err := listenAttach(path, hub)
	if err != nil {
		t.Fatal(err)
	}
	a, err := dialAttach(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	hub.write(frameStdout, []byte("out"))
	hub.write(frameStderr, []byte("err"))
	for _, want := range []outputChunk{{frameStdout, []byte("out")}, {frameStderr, []byte("err")}} {
		c, err := a.next()
		if err != nil || c.stream != want.stream || string(c.data) != string(want.data) {
			t.Fatalf("chunk %d %q %v, want %d %q", c.stream, c.data, err, want.stream, want.data)
		}
	}
	hub.end()
	if _, err := a.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the output ended: %v, want EOF", err)
	}
	srv.close(time.Second)
	if _, err := dialAttach(path); err == nil {
		t.Fatal("the socket still answers once closed")
	}
}
