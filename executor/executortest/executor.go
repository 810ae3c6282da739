package executortest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Executor is a fake ExecutorService. It answers:
//
//   - ApplyActions: the error SetApplyError set, else the answer of the
//     function SetApplyAnswer set, else an empty response;
//   - RemoveResources: every container and sandbox removed;
//   - UpdatePodVolumes, RemovePodVolumes: empty responses;
//   - Exec: standard input echoed to standard output, a terminal resize
//     said as "resized" on standard error, and exit code 5 once standard
//     input ends (or the caller stops sending);
//   - Attach: standard input echoed to standard output, and exit code 9
//     once the caller stops sending;
//   - ContainerLogs: NotFound for a previous instance, else the lines
//     SetLogs set, one message each, from container "c1";
//   - ListPodStats: the stats SetPodStats set of the pods asked for;
//   - ListBackoffs: the entries SetBackoffs set;
//   - ResetBackoff: one entry cleared;
//   - anything else: Unimplemented.
//
// Requests returns what it was asked. The zero Executor is ready; it is
// safe for concurrent use.
type Executor struct {
	executorv1.UnimplementedExecutorServiceServer

	mu       sync.Mutex
	answer   func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse
	applyErr error
	logs     []string
	stats    map[string]*syncpodv1.PodStats
	backoffs []*executorv1.BackoffEntry
	reqs     Requests
}

// Requests are the requests an Executor got, each kind in arrival order.
type Requests struct {
	Applies        []*executorv1.ApplyActionsRequest
	Removes        []*executorv1.RemoveResourcesRequest
	VolumeUpdates  []*executorv1.UpdatePodVolumesRequest
	VolumeRemovals []*executorv1.RemovePodVolumesRequest
	// Starts are the starts of Exec and Attach sessions; an Attach's is
	// given as an ExecStart without a command.
	Starts   []*executorv1.ExecStart
	Logs     []*executorv1.ContainerLogsRequest
	PodStats []*executorv1.ListPodStatsRequest
	Resets   []*executorv1.ResetBackoffRequest
}

// Requests returns what the executor was asked so far.
func (e *Executor) Requests() Requests {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.reqs
	return Requests{
		Applies: slices.Clone(r.Applies), Removes: slices.Clone(r.Removes),
		VolumeUpdates: slices.Clone(r.VolumeUpdates), VolumeRemovals: slices.Clone(r.VolumeRemovals),
		Starts: slices.Clone(r.Starts), Logs: slices.Clone(r.Logs), PodStats: slices.Clone(r.PodStats), Resets: slices.Clone(r.Resets),
	}
}

// SetApplyAnswer makes fn answer ApplyActions (nil: an empty response).
func (e *Executor) SetApplyAnswer(fn func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answer = fn
}

// SetApplyError makes ApplyActions fail with err (nil: answer again).
func (e *Executor) SetApplyError(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applyErr = err
}

// SetLogs sets the lines ContainerLogs sends.
func (e *Executor) SetLogs(lines ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logs = lines
}

// SetPodStats sets the stats ListPodStats knows, by their pod's uid.
func (e *Executor) SetPodStats(stats ...*syncpodv1.PodStats) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats = map[string]*syncpodv1.PodStats{}
	for _, s := range stats {
		e.stats[s.GetPodUid()] = s
	}
}

// SetBackoffs sets the entries ListBackoffs lists.
func (e *Executor) SetBackoffs(entries ...*executorv1.BackoffEntry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.backoffs = entries
}

// ApplyActions records req and answers as set.
func (e *Executor) ApplyActions(_ context.Context, req *executorv1.ApplyActionsRequest) (*executorv1.ApplyActionsResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs.Applies = append(e.reqs.Applies, req)
	if e.applyErr != nil {
		return nil, e.applyErr
	}
	if e.answer != nil {
		return e.answer(req), nil
	}
	return &executorv1.ApplyActionsResponse{}, nil
}

// RemoveResources records req and reports every id removed.
func (e *Executor) RemoveResources(_ context.Context, req *executorv1.RemoveResourcesRequest) (*executorv1.RemoveResourcesResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs.Removes = append(e.reqs.Removes, req)
	resp := &executorv1.RemoveResourcesResponse{}
	for _, id := range req.GetContainerIds() {
		resp.Results = append(resp.Results, &executorv1.RemoveResult{Id: id, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED})
	}
	for _, id := range req.GetSandboxIds() {
		resp.Results = append(resp.Results, &executorv1.RemoveResult{Id: id, Sandbox: true, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED})
	}
	return resp, nil
}

// UpdatePodVolumes records req.
func (e *Executor) UpdatePodVolumes(_ context.Context, req *executorv1.UpdatePodVolumesRequest) (*executorv1.UpdatePodVolumesResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs.VolumeUpdates = append(e.reqs.VolumeUpdates, req)
	return &executorv1.UpdatePodVolumesResponse{}, nil
}

// RemovePodVolumes records req.
func (e *Executor) RemovePodVolumes(_ context.Context, req *executorv1.RemovePodVolumesRequest) (*executorv1.RemovePodVolumesResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs.VolumeRemovals = append(e.reqs.VolumeRemovals, req)
	return &executorv1.RemovePodVolumesResponse{}, nil
}

func (e *Executor) started(s *executorv1.ExecStart) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs.Starts = append(e.reqs.Starts, s)
}

// Exec records the start and echoes (see Executor).
func (e *Executor) Exec(stream executorv1.ExecutorService_ExecServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	e.started(first.GetStart())
	out := func(o *syncpodv1.StreamOutput) error { return stream.Send(&executorv1.ExecResponse{Output: o}) }
	for {
		msg, err := stream.Recv()
		if err != nil {
			return out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_ExitCode{ExitCode: 5}})
		}
		switch in := msg.GetInput().GetInput().(type) {
		case *syncpodv1.StreamInput_Stdin:
			err = out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stdout{Stdout: in.Stdin}})
		case *syncpodv1.StreamInput_Resize:
			err = out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stderr{Stderr: []byte("resized")}})
		case *syncpodv1.StreamInput_StdinClosed:
			return out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_ExitCode{ExitCode: 5}})
		}
		if err != nil {
			return err
		}
	}
}

// Attach records the start and echoes (see Executor).
func (e *Executor) Attach(stream executorv1.ExecutorService_AttachServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	e.started(&executorv1.ExecStart{ContainerId: first.GetStart().GetContainerId(), Stdin: first.GetStart().GetStdin(), Tty: first.GetStart().GetTty()})
	for {
		msg, err := stream.Recv()
		if err != nil {
			return stream.Send(&executorv1.AttachResponse{Output: &syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_ExitCode{ExitCode: 9}}})
		}
		if in := msg.GetInput().GetStdin(); in != nil {
			if err := stream.Send(&executorv1.AttachResponse{Output: &syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stdout{Stdout: in}}}); err != nil {
				return err
			}
		}
	}
}

// ContainerLogs records req and sends the lines set (see Executor).
func (e *Executor) ContainerLogs(req *executorv1.ContainerLogsRequest, stream executorv1.ExecutorService_ContainerLogsServer) error {
	e.mu.Lock()
	e.reqs.Logs = append(e.reqs.Logs, req)
	lines := e.logs
	e.mu.Unlock()
	if req.GetPrevious() {
		return status.Error(codes.NotFound, fmt.Sprintf("previous terminated container %q not found", req.GetContainer()))
	}
	for _, s := range lines {
		if err := stream.Send(&executorv1.ContainerLogsResponse{ContainerId: "c1", Lines: []*syncpodv1.LogLine{{Content: []byte(s)}}}); err != nil {
			return err
		}
	}
	return nil
}

// ListPodStats records req and answers the stats set of the pods asked
// for, in the order asked.
func (e *Executor) ListPodStats(_ context.Context, req *executorv1.ListPodStatsRequest) (*executorv1.ListPodStatsResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs.PodStats = append(e.reqs.PodStats, req)
	resp := &executorv1.ListPodStatsResponse{}
	for _, uid := range req.GetPodUids() {
		if s, ok := e.stats[uid]; ok {
			resp.Stats = append(resp.Stats, s)
		}
	}
	return resp, nil
}

// ListBackoffs answers the entries set.
func (e *Executor) ListBackoffs(context.Context, *executorv1.ListBackoffsRequest) (*executorv1.ListBackoffsResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return &executorv1.ListBackoffsResponse{Entries: e.backoffs}, nil
}

// ResetBackoff records req and says it cleared one entry.
func (e *Executor) ResetBackoff(_ context.Context, req *executorv1.ResetBackoffRequest) (*executorv1.ResetBackoffResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs.Resets = append(e.reqs.Resets, req)
	return &executorv1.ResetBackoffResponse{Removed: 1}, nil
}
