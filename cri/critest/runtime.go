package critest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
)

// Stop is one recorded StopContainer call.
type Stop struct {
	// ID of the container.
	ID string
	// Timeout is the grace period passed, seconds.
	Timeout int64
}

// Runtime is the in-memory CRI runtime service every syncpod module tests
// against. It embeds the cri-api fake and adds what syncpod depends on in
// real runtimes: RunPodSandbox refuses metadata already in use with
// containerd's "name is reserved" error; a missing object is gRPC
// NotFound; lists come back sorted by id. For the executor it records
// StopContainer and StopPodSandbox calls in order; for the PLEG it has
// knobs for failing lists, hanging inspections and a GetContainerEvents
// stream (observer.go). All methods are safe for concurrent use.
type Runtime struct {
	*critesting.FakeRuntimeService

	mu           sync.Mutex
	stops        []Stop
	sandboxStops []string
	obs          observerState
	// ExecFunc, when set, answers ExecSync. A non-zero code comes back the
	// way the kubelet's remote client reports it: as an error with an
	// ExitStatus method.
	ExecFunc func(id string, cmd []string) (code int32, stdout []byte, err error)
}

// ExecSync answers with ExecFunc, or as the cri-api fake does.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	if r.ExecFunc == nil {
		return r.FakeRuntimeService.ExecSync(ctx, id, cmd, timeout)
	}
	code, out, err := r.ExecFunc(id, cmd)
	if err == nil && code != 0 {
		err = ExitError(code)
	}
	return out, nil, err
}

// ExitError is a command's non-zero exit, as CRI clients report it.
type ExitError int32

func (e ExitError) Error() string { return fmt.Sprintf("command exited with %d", int32(e)) }

// ExitStatus is the exit code.
func (e ExitError) ExitStatus() int { return int(e) }

// NewRuntime returns an empty fake runtime whose GetContainerEvents
// answers Unimplemented (see WithEvents).
func NewRuntime() *Runtime {
	return &Runtime{
		FakeRuntimeService: critesting.NewFakeRuntimeService(),
		obs: observerState{
			streams: map[chan *runtimeapi.ContainerEventResponse]chan error{},
			calls:   map[string]int{},
		},
	}
}

// RunPodSandbox creates a sandbox unless one with the same metadata exists.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	name := critesting.BuildSandboxName(config.GetMetadata())
	r.FakeRuntimeService.Lock()
	_, exists := r.Sandboxes[name]
	r.FakeRuntimeService.Unlock()
	if exists {
		return "", status.Errorf(codes.Unknown, "failed to reserve sandbox name %q: name %q is reserved for %q", name, name, name)
	}
	return r.FakeRuntimeService.RunPodSandbox(ctx, config, handler)
}

// StopContainer records the call, then stops the container.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	r.stops = append(r.stops, Stop{ID: id, Timeout: timeout})
	r.mu.Unlock()
	return asNotFound(r.FakeRuntimeService.StopContainer(ctx, id, timeout))
}

// StopPodSandbox records the call, then stops the sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	r.sandboxStops = append(r.sandboxStops, id)
	r.mu.Unlock()
	return asNotFound(r.FakeRuntimeService.StopPodSandbox(ctx, id))
}

// The cri-api fake reports a missing object as a plain error ending in
// "not found"; real runtimes (containerd, crisim) answer gRPC NotFound.
// These methods answer as the real ones do.

// RemoveContainer is the fake's, with NotFound as runtimes report it.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	return asNotFound(r.FakeRuntimeService.RemoveContainer(ctx, id))
}

// RemovePodSandbox is the fake's, with NotFound as runtimes report it.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	return asNotFound(r.FakeRuntimeService.RemovePodSandbox(ctx, id))
}

func asNotFound(err error) error {
	if err != nil && status.Code(err) == codes.Unknown && strings.HasSuffix(err.Error(), "not found") {
		return status.Error(codes.NotFound, err.Error())
	}
	return err
}

// Stops returns the recorded container stops in call order.
func (r *Runtime) Stops() []Stop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Stop(nil), r.stops...)
}

// SandboxStops returns the recorded sandbox stops in call order.
func (r *Runtime) SandboxStops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sandboxStops...)
}

// AddContainer puts a container straight into the fake (for observed
// state that the executor did not create).
func (r *Runtime) AddContainer(sandboxID, id, name string, state runtimeapi.ContainerState) {
	r.FakeRuntimeService.Lock()
	defer r.FakeRuntimeService.Unlock()
	r.Containers[id] = &critesting.FakeContainer{
		ContainerStatus: runtimeapi.ContainerStatus{
			Id:       id,
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			State:    state,
		},
		SandboxID: sandboxID,
	}
}

// AddSandbox puts a sandbox straight into the fake.
func (r *Runtime) AddSandbox(id string, md *runtimeapi.PodSandboxMetadata, state runtimeapi.PodSandboxState, labels map[string]string) {
	r.FakeRuntimeService.Lock()
	defer r.FakeRuntimeService.Unlock()
	r.Sandboxes[id] = &critesting.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id: id, Metadata: md, State: state, Labels: labels,
	}}
}

// ContainerIDs returns the ids of every container in the fake.
func (r *Runtime) ContainerIDs() []string {
	r.FakeRuntimeService.Lock()
	defer r.FakeRuntimeService.Unlock()
	var out []string
	for id := range r.Containers {
		out = append(out, id)
	}
	return out
}

// Images is the cri-api fake image service.
type Images = critesting.FakeImageService

// NewImages returns a fake image service holding images.
func NewImages(images ...string) *Images {
	is := critesting.NewFakeImageService()
	is.SetFakeImages(images)
	return is
}

// String describes a stop for test messages.
func (s Stop) String() string { return fmt.Sprintf("%s(%ds)", s.ID, s.Timeout) }

// ExitContainer marks a container exited with code and reason at
// finishedAt (nanoseconds); an unknown id is ignored.
func (r *Runtime) ExitContainer(id string, code int32, reason string, finishedAt int64) {
	r.FakeRuntimeService.Lock()
	defer r.FakeRuntimeService.Unlock()
	if c, ok := r.Containers[id]; ok {
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		c.ExitCode, c.Reason, c.FinishedAt = code, reason, finishedAt
	}
}

// SetCreatedAt overrides a container's creation time (for ordering).
func (r *Runtime) SetCreatedAt(id string, at time.Time) {
	r.FakeRuntimeService.Lock()
	defer r.FakeRuntimeService.Unlock()
	if c, ok := r.Containers[id]; ok {
		c.CreatedAt = at.UnixNano()
	}
}

// ImageCalls returns the method names called on an image fake.
func ImageCalls(is *Images) []string {
	is.Lock()
	defer is.Unlock()
	return append([]string(nil), is.Called...)
}
