package crisim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A container's output, as crisim (or the container's shim) reads it from
// the process's pipes or terminal, goes two ways at once: into the CRI log,
// split into entries, and to every attach session open at that moment, as
// a runtime fans its task's IO out to the log and to attached streams. So
// attach shows the process's live output, raw (a prompt without a newline
// shows), whether or not the container has a log path.
//
// A shim serves its container's output on a unix socket in the state
// directory (exits/<id>.attach.sock), so the crisim that started it, or a
// later one, attaches through it.

// The streams of an output chunk, and what else an attach socket frames.
const (
	frameReady  byte = 0 // the session is subscribed: output from now on
	frameStdout byte = 1
	frameStderr byte = 2
	frameBehind byte = 3 // the session fell behind and was dropped
)

// attachBuffer is how many chunks (each at most outputChunkSize bytes) an
// attach session may lag behind the container's output before it is
// ended: the container's output never waits for a slow session.
const attachBuffer = 256

// outputChunkSize is the most one read from the process yields.
const outputChunkSize = 32 << 10

// errAttachBehind ends an attach session that fell behind the output.
var errAttachBehind = fmt.Errorf("the attach session fell behind the container's output by more than %d chunks and was ended; attach again", attachBuffer)

// outputChunk is one read of a container's output.
type outputChunk struct {
	stream byte // frameStdout or frameStderr
	data   []byte
}

// outputHub fans a container's output out to its log and its attach
// sessions. Safe for concurrent use.
type outputHub struct {
	lw *logWriter

	mu    sync.Mutex
	lines [3][]byte // per stream, the start of a log line not yet ended
	subs  map[*outputSub]struct{}
	ended bool
}

func newOutputHub(lw *logWriter) *outputHub {
	return &outputHub{lw: lw, subs: map[*outputSub]struct{}{}}
}

// pump copies what r yields as stream until r ends, then writes the
// stream's unended last line as a partial entry.
func (h *outputHub) pump(stream byte, r io.Reader) {
	buf := make([]byte, outputChunkSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			h.write(stream, buf[:n])
		}
		if err != nil {
			break
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if rest := h.lines[stream]; len(rest) > 0 {
		// Unended: partial, as containerd writes it; nothing ever
		// completed it.
		h.lw.entry(streamName(stream), false, rest)
		h.lines[stream] = nil
	}
}

// write sends one chunk to the log and to every session.
func (h *outputHub) write(stream byte, p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logLocked(stream, p)
	if len(h.subs) == 0 {
		return
	}
	c := outputChunk{stream: stream, data: bytes.Clone(p)}
	for s := range h.subs {
		select {
		case s.ch <- c:
		default:
			s.behind = true
			delete(h.subs, s)
			close(s.ch)
		}
	}
}

// logLocked writes p's complete lines as full entries; a line longer
// than maxLogLine is written in partial entries of maxLogLine bytes.
func (h *outputHub) logLocked(stream byte, p []byte) {
	line := p
	if len(h.lines[stream]) > 0 {
		line = append(h.lines[stream], p...)
	}
	name := streamName(stream)
	for {
		i := bytes.IndexByte(line[:min(len(line), maxLogLine)], '\n')
		if i >= 0 {
			h.lw.entry(name, true, line[:i])
			line = line[i+1:]
			continue
		}
		if len(line) >= maxLogLine {
			h.lw.entry(name, false, line[:maxLogLine])
			line = line[maxLogLine:]
			continue
		}
		break
	}
	h.lines[stream] = append(h.lines[stream][:0:0], line...)
}

// end closes every session: the output is over.
func (h *outputHub) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.ch)
	}
}

// subscribe opens a session that receives the output from now on.
func (h *outputHub) subscribe() *outputSub {
	s := &outputSub{hub: h, ch: make(chan outputChunk, attachBuffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		close(s.ch)
	} else {
		h.subs[s] = struct{}{}
	}
	return s
}

func streamName(stream byte) string {
	if stream == frameStderr {
		return "stderr"
	}
	return "stdout"
}

// outputStream is an attach session's view of a container's output.
type outputStream interface {
	// next returns the next chunk; io.EOF once the output ended,
	// errAttachBehind when the session fell behind.
	next() (outputChunk, error)
	// close ends the session; a blocked next returns.
	close()
}

// outputSub is a session on a hub in this process.
type outputSub struct {
	hub    *outputHub
	ch     chan outputChunk
	behind bool // set under hub.mu before ch is closed
}

func (s *outputSub) next() (outputChunk, error) {
	c, ok := <-s.ch
	if !ok {
		if s.behind {
			return outputChunk{}, errAttachBehind
		}
		return outputChunk{}, io.EOF
	}
	return c, nil
}

func (s *outputSub) close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if _, ok := s.hub.subs[s]; ok {
		delete(s.hub.subs, s)
		close(s.ch)
	}
}

// writeFrame writes one frame: its type, its length (4 bytes, big
// endian) and its data.
func writeFrame(w io.Writer, typ byte, data []byte) error {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(data)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	_, err := w.Write(data)
	return err
}

// readFrame reads one frame; a frame longer than outputChunkSize is bad.
func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > outputChunkSize {
		return 0, nil, fmt.Errorf("attach socket: a frame of %d bytes", n)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return 0, nil, io.ErrUnexpectedEOF
	}
	return hdr[0], data, nil
}

// attachServer serves a hub's output on a unix socket (a shim's).
type attachServer struct {
	l     *net.UnixListener
	path  string
	hub   *outputHub
	conns sync.WaitGroup
	mu    sync.Mutex
	open  map[net.Conn]struct{}
}

// listenAttach listens on path for attach sessions to hub.
func listenAttach(path string, hub *outputHub) (*attachServer, error) {
	_ = os.Remove(path) // a socket left by a shim that was killed
	var l *net.UnixListener
	err := withUnixPath(path, func(addr string) error {
		var err error
		l, err = net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("attach socket %s: %w", path, err)
	}
	// Its name may be one valid only while it was bound (withUnixPath):
	// removed by path instead.
	l.SetUnlinkOnClose(false)
	_ = os.Chmod(path, 0o600)
	s := &attachServer{l: l, path: path, hub: hub, open: map[net.Conn]struct{}{}}
	go s.accept()
	return s, nil
}

func (s *attachServer) accept() {
	for {
		conn, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.open[conn] = struct{}{}
		s.conns.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

// serve sends a ready frame once subscribed, then every chunk, until the
// output ends (the connection is closed), the session falls behind (a
// behind frame) or the peer goes.
func (s *attachServer) serve(conn net.Conn) {
	defer s.conns.Done()
	defer func() {
		s.mu.Lock()
		delete(s.open, conn)
		s.mu.Unlock()
		_ = conn.Close()
	}()
	sub := s.hub.subscribe()
	defer sub.close()
	go func() {
		// The peer sends nothing: a read ends when it goes.
		_, _ = io.Copy(io.Discard, conn)
		sub.close()
	}()
	w := bufio.NewWriterSize(conn, outputChunkSize+5)
	if writeFrame(w, frameReady, nil) != nil || w.Flush() != nil {
		return
	}
	for {
		c, err := sub.next()
		switch {
		case errors.Is(err, errAttachBehind):
			_ = writeFrame(w, frameBehind, nil)
			_ = w.Flush()
			return
		case err != nil:
			return
		}
		if writeFrame(w, c.stream, c.data) != nil {
			return
		}
		if len(sub.ch) == 0 && w.Flush() != nil {
			return
		}
	}
}

// close stops accepting, waits up to wait for the sessions to send what
// they have, ends the rest and removes the socket.
func (s *attachServer) close(wait time.Duration) {
	_ = s.l.Close()
	_ = os.Remove(s.path)
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		s.mu.Lock()
		for c := range s.open {
			_ = c.Close()
		}
		s.mu.Unlock()
		<-done
	}
}

// attachConn is a session on a shim's attach socket.
type attachConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialAttach connects to the attach socket at path and waits until the
// session is subscribed.
func dialAttach(path string) (*attachConn, error) {
	var conn net.Conn
	err := withUnixPath(path, func(addr string) error {
		var err error
		conn, err = net.DialTimeout("unix", addr, 10*time.Second)
		return err
	})
	if err != nil {
		return nil, err
	}
	a := &attachConn{conn: conn, r: bufio.NewReaderSize(conn, outputChunkSize+5)}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, _, err := readFrame(a.r)
	if err == nil && typ != frameReady {
		err = fmt.Errorf("attach socket: frame %d before ready", typ)
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Time{})
	return a, nil
}

func (a *attachConn) next() (outputChunk, error) {
	typ, data, err := readFrame(a.r)
	switch {
	case err != nil:
		if errors.Is(err, net.ErrClosed) {
			err = io.EOF
		}
		return outputChunk{}, err
	case typ == frameBehind:
		return outputChunk{}, errAttachBehind
	case typ != frameStdout && typ != frameStderr:
		return outputChunk{}, fmt.Errorf("attach socket: unknown frame %d", typ)
	}
	return outputChunk{stream: typ, data: data}, nil
}

func (a *attachConn) close() { _ = a.conn.Close() }

// maxUnixPath is the longest socket path a sockaddr_un holds, with its
// terminating NUL.
const maxUnixPath = 107

// withUnixPath calls f with an address for the socket at path: path
// itself, or, when it is too long for a socket address, the same file
// named through this process's descriptor of its directory
// (/proc/self/fd/N/name), open while f runs.
func withUnixPath(path string, f func(addr string) error) error {
	if len(path) <= maxUnixPath {
		return f(path)
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	addr := fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path))
	if len(addr) > maxUnixPath {
		return fmt.Errorf("socket name %s is too long", filepath.Base(path))
	}
	return f(addr)
}
