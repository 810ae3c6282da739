package critest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
)

// The objects a test puts into the runtime, or changes, behind the CRI's
// back (crisim's Seed* and Forget): no call is recorded, no event sent.
// Misuse (an unknown id) panics: it is a broken test.

func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("critest: %v", err))
	}
}

// AddSandbox puts a sandbox straight into the runtime.
func (r *Runtime) AddSandbox(id string, md *runtimeapi.PodSandboxMetadata, state runtimeapi.PodSandboxState, labels map[string]string) {
	must(r.sim.SeedSandbox(&runtimeapi.PodSandboxStatus{Id: id, Metadata: md, State: state, Labels: labels}))
}

// AddPodSandbox adds a ready, host-network sandbox of pod uid, labelled as
// the executor labels it.
func (r *Runtime) AddPodSandbox(uid, id string, attempt uint32, createdAt int64) {
	must(r.sim.SeedSandbox(&runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "default", Uid: uid, Attempt: attempt},
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: createdAt,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_NODE,
		}}},
		Labels: map[string]string{
			crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid,
			crilabels.PodName: "pod-" + uid, crilabels.PodNamespace: "default",
		},
	}))
}

// SetSandboxState sets a sandbox's state (its containers are left as
// they are).
func (r *Runtime) SetSandboxState(id string, st runtimeapi.PodSandboxState) {
	resp, err := r.rs.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	must(err)
	s := proto.Clone(resp.GetStatus()).(*runtimeapi.PodSandboxStatus)
	s.State = st
	must(r.sim.SeedSandbox(s))
}

// AddContainer puts a container straight into sandbox sandboxID (made,
// ready and bare, if there is none), for observed state that the
// executor did not create.
func (r *Runtime) AddContainer(sandboxID, id, name string, state runtimeapi.ContainerState) {
	if _, err := r.rs.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID}); err != nil {
		r.AddSandbox(sandboxID, &runtimeapi.PodSandboxMetadata{Name: sandboxID}, runtimeapi.PodSandboxState_SANDBOX_READY, nil)
	}
	must(r.sim.SeedContainer(sandboxID, &runtimeapi.ContainerStatus{
		Id:       id,
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		State:    state,
	}))
}

// AddPodContainer adds a running container named name to a sandbox added
// by AddPodSandbox, labelled as the executor labels it with specHash and
// annotated with restarts.
func (r *Runtime) AddPodContainer(sandboxID, id, name, specHash string, restarts int, createdAt int64) {
	resp, err := r.rs.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
	must(err)
	uid := resp.GetStatus().GetMetadata().GetUid()
	must(r.sim.SeedContainer(sandboxID, &runtimeapi.ContainerStatus{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: name},
		State:     runtimeapi.ContainerState_CONTAINER_RUNNING,
		CreatedAt: createdAt,
		StartedAt: createdAt + 1,
		Image:     &runtimeapi.ImageSpec{Image: "busybox"},
		Labels: map[string]string{
			crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid,
			crilabels.ContainerName: name, crilabels.SpecHash: specHash,
		},
		Annotations: map[string]string{crilabels.RestartCount: strconv.Itoa(restarts)},
	}))
}

// EditContainer changes container id's status as edit says (its id
// stays).
func (r *Runtime) EditContainer(id string, edit func(st *runtimeapi.ContainerStatus)) {
	if !r.editContainer(id, edit) {
		panic(fmt.Sprintf("critest: no container %q", id))
	}
}

// editContainer is EditContainer, false for an unknown id.
func (r *Runtime) editContainer(id string, edit func(st *runtimeapi.ContainerStatus)) bool {
	st, sandboxID := r.containerStatus(id)
	if st == nil {
		return false
	}
	edit(st)
	st.Id = id
	must(r.sim.SeedContainer(sandboxID, st))
	return true
}

// SetContainerState sets a container's state.
func (r *Runtime) SetContainerState(id string, st runtimeapi.ContainerState) {
	r.EditContainer(id, func(s *runtimeapi.ContainerStatus) { s.State = st })
}

// ExitContainer marks a container exited with code and reason at
// finishedAt (nanoseconds); an unknown id is ignored.
func (r *Runtime) ExitContainer(id string, code int32, reason string, finishedAt int64) {
	r.editContainer(id, func(s *runtimeapi.ContainerStatus) {
		s.State = runtimeapi.ContainerState_CONTAINER_EXITED
		s.ExitCode, s.Reason, s.FinishedAt = code, reason, finishedAt
	})
}

// SetCreatedAt overrides a container's creation time (for ordering); an
// unknown id is ignored.
func (r *Runtime) SetCreatedAt(id string, at time.Time) {
	r.editContainer(id, func(s *runtimeapi.ContainerStatus) { s.CreatedAt = at.UnixNano() })
}

// Remove removes a container or sandbox (a sandbox with its containers)
// behind the runtime service's back.
func (r *Runtime) Remove(id string) { r.sim.Forget(id) }

// ContainerIDs returns the ids of every container in the runtime.
func (r *Runtime) ContainerIDs() []string {
	resp, err := r.rs.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	must(err)
	var out []string
	for _, c := range resp.GetContainers() {
		out = append(out, c.GetId())
	}
	return out
}

// containerStatus is a copy of container id's status and its sandbox's
// id; nil if there is no such container.
func (r *Runtime) containerStatus(id string) (*runtimeapi.ContainerStatus, string) {
	resp, err := r.rs.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return nil, ""
	}
	return proto.Clone(resp.GetStatus()).(*runtimeapi.ContainerStatus), resp.GetInfo()["sandbox_id"]
}
