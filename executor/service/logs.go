package service

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/executor/crilog"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// logBatch is the most lines sent in one ContainerLogsResponse.
const logBatch = 256

// logPollInterval is how often a followed log whose end was reached is
// read again, and its container's state checked.
const logPollInterval = 200 * time.Millisecond

// ValidateContainerLogs checks a ContainerLogs request, every problem at
// once.
func ValidateContainerLogs(req *executorv1.ContainerLogsRequest) error {
	var l fielderr.List
	if req.GetPodUid() == "" {
		l.Add("pod_uid", "required")
	} else if n := len(req.GetPodUid()); n > validation.MaxIDLen {
		l.Add("pod_uid", "%d bytes exceed the limit of %d", n, validation.MaxIDLen)
	}
	l.Append("", validation.ContainerRefProblems("container", req.GetContainer()))
	l.Append("", validation.TimestampProblems("since_time", req.GetSinceTime()))
	if req.TailLines != nil && req.GetTailLines() < 0 {
		l.Add("tail_lines", "must be >= 0")
	}
	return l.Err()
}

// ContainerLogs streams a container instance's CRI log file.
func (s *Service) ContainerLogs(req *executorv1.ContainerLogsRequest, stream executorv1.ExecutorService_ContainerLogsServer) error {
	if err := ValidateContainerLogs(req); err != nil {
		return errgrpc.ToGRPC(err)
	}
	return errgrpc.ToGRPC(classify(streamContainerLogs(stream.Context(), s.runner.Runtime(), req, func(id string, lines []*syncpodv1.LogLine) error {
		return stream.Send(&executorv1.ContainerLogsResponse{Lines: lines, ContainerId: id})
	})))
}

// pickInstance returns the newest instance of the container, or the one
// before it when previous is set.
func pickInstance(ctx context.Context, rt runtimeclient.RuntimeAPI, podUID, name string, previous bool) (*runtimeapi.Container, error) {
	list, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		crilabels.PodUID: podUID, crilabels.ContainerName: name,
	}})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(list, func(a, b *runtimeapi.Container) int {
		switch {
		case a.GetCreatedAt() > b.GetCreatedAt():
			return -1
		case a.GetCreatedAt() < b.GetCreatedAt():
			return 1
		}
		return 0
	})
	want := 0
	if previous {
		want = 1
		// In a crash loop's back-off the newest instance is itself the
		// last terminated one (the kubelet's lastState), and the one
		// before it may be gone: one dead instance is kept per
		// container, as the kubelet keeps. (A container that ended for
		// good and never restarted has its one instance read here too,
		// where the kubelet finds no previous.)
		if len(list) == 1 && list[0].GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			return list[0], nil
		}
	}
	if len(list) <= want {
		if previous {
			return nil, errgrpc.Errorf(errgrpc.ErrNotFound, "previous terminated container %q in pod %s not found", name, podUID)
		}
		return nil, errgrpc.Errorf(errgrpc.ErrNotFound, "container %q in pod %s has not been created yet (or was removed)", name, podUID)
	}
	return list[want], nil
}

// streamContainerLogs reads the log of the instance the request selects
// and hands it to send in batches.
func streamContainerLogs(ctx context.Context, rt runtimeclient.RuntimeAPI, req *executorv1.ContainerLogsRequest, send func(id string, lines []*syncpodv1.LogLine) error) error {
	c, err := pickInstance(ctx, rt, req.GetPodUid(), req.GetContainer(), req.GetPrevious())
	if err != nil {
		return err
	}
	st, err := rt.ContainerStatus(ctx, c.GetId(), false)
	if err != nil {
		return err
	}
	path := st.GetStatus().GetLogPath()
	if path == "" {
		return errgrpc.Errorf(errgrpc.ErrFailedPrecondition, "container %q (%s) has no log file", req.GetContainer(), c.GetId())
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return errgrpc.Errorf(errgrpc.ErrNotFound, "the log of container %q (%s) is gone: %s", req.GetContainer(), c.GetId(), path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := &logReader{r: bufio.NewReaderSize(f, 64<<10)}
	var since time.Time
	if req.GetSinceTime() != nil {
		since = req.GetSinceTime().AsTime()
	}
	keep := func(l *syncpodv1.LogLine) bool { return since.IsZero() || !l.GetTime().AsTime().Before(since) }

	// What is there now: all of it, or its tail.
	var batch []*syncpodv1.LogLine
	var tail []*syncpodv1.LogLine
	tailing := req.TailLines != nil
	for {
		l, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if !keep(l) {
			continue
		}
		if tailing {
			tail = append(tail, l)
			if int64(len(tail)) > req.GetTailLines() {
				tail = tail[1:]
			}
			continue
		}
		batch = append(batch, l)
		if len(batch) == logBatch {
			if err := send(c.GetId(), batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	batch = append(batch, tail...)
	running := st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING ||
		st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_CREATED
	if !req.GetFollow() || !running {
		batch = append(batch, r.parser.Flush()...)
		if len(batch) > 0 {
			return send(c.GetId(), batch)
		}
		return nil
	}
	for len(batch) > 0 {
		n := min(len(batch), logBatch)
		if err := send(c.GetId(), batch[:n]); err != nil {
			return err
		}
		batch = batch[n:]
	}
	// Follow: read what is appended until the instance has stopped and
	// its log is read to the end.
	tick := time.NewTicker(logPollInterval)
	defer tick.Stop()
	for {
		var got []*syncpodv1.LogLine
		for len(got) < logBatch {
			l, err := r.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if keep(l) {
				got = append(got, l)
			}
		}
		if len(got) > 0 {
			if err := send(c.GetId(), got); err != nil {
				return err
			}
			continue
		}
		if !running {
			if rest := r.parser.Flush(); len(rest) > 0 {
				return send(c.GetId(), rest)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		// Read once more after the instance stops: it may have written
		// its last lines just before.
		cst, err := rt.ContainerStatus(ctx, c.GetId(), false)
		switch {
		case errgrpc.Class(err) == errgrpc.ErrNotFound:
			running = false
		case err != nil:
			return err
		default:
			s := cst.GetStatus().GetState()
			running = s == runtimeapi.ContainerState_CONTAINER_RUNNING || s == runtimeapi.ContainerState_CONTAINER_CREATED
		}
	}
}

// logReader reads log lines from a file that may still grow: a physical
// line is only parsed once its newline has been written.
type logReader struct {
	r       *bufio.Reader
	pending []byte // the start of a physical line whose end is not written yet
	parser  crilog.Parser
}

// next returns the next complete log line, or io.EOF when the file holds
// no complete one yet.
func (lr *logReader) next() (*syncpodv1.LogLine, error) {
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			lr.pending = append(lr.pending, chunk...)
			continue
		}
		if err == io.EOF {
			lr.pending = append(lr.pending, chunk...)
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("reading log: %w", err)
		}
		line := chunk[:len(chunk)-1]
		if len(lr.pending) > 0 {
			line = append(lr.pending, line...)
			lr.pending = nil
		}
		if l, ok := lr.parser.Feed(line); ok {
			return l, nil
		}
	}
}
