package crisim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer records a container in the CREATED state.
func (r *Runtime) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	if err := validateContainerConfig(req.GetPodSandboxId(), cfg); err != nil {
		return nil, err
	}
	var sim simSpec
	if r.opts.Mode == ModeSimulated {
		s, err := parseSimSpec(cfg.GetAnnotations())
		if err != nil {
			return nil, err
		}
		sim = s
	}
	env := make([]string, 0, len(cfg.GetEnvs())+1)
	hasPath := false
	for _, kv := range cfg.GetEnvs() {
		env = append(env, kv.GetKey()+"="+string(kv.GetValue()))
		hasPath = hasPath || kv.GetKey() == "PATH"
	}
	if !hasPath {
		env = append(env, "PATH="+os.Getenv("PATH"))
	}
	pm := mountMap(cfg.GetMounts())
	env = mapEnv(env, pm)

	user, err := processUser(cfg.GetLinux().GetSecurityContext(), effectiveUID(), lookupUser)
	if err != nil {
		return nil, err
	}
	workingDir := mapPaths(cfg.GetWorkingDir(), pm)
	if user != nil && workingDir == "" {
		// crisim's own directory may be closed to that user; a container
		// without a working dir starts in "/" anyway.
		workingDir = "/"
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	sb, ok := r.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, fmt.Errorf("%w: sandbox %q", ErrNotFound, req.GetPodSandboxId())
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("%w: sandbox %q is not ready", ErrFailedPrecondition, sb.id)
	}
	imgName := cfg.GetImage().GetImage()
	img, ok := r.images[imgName]
	if !ok {
		return nil, fmt.Errorf("%w: image %q: pull it before creating a container", ErrNotFound, imgName)
	}
	md := cfg.GetMetadata()
	name := fmt.Sprintf("%s_%s_%d", sb.id, md.GetName(), md.GetAttempt())
	if owner, ok := r.ctrNames[name]; ok {
		return nil, fmt.Errorf("%w: failed to reserve container name %q: name %q is reserved for %q", ErrReserved, name, name, owner)
	}
	c := &container{
		id:          newID(),
		sandboxID:   sb.id,
		meta:        &runtimeapi.ContainerMetadata{Name: md.GetName(), Attempt: md.GetAttempt()},
		image:       &runtimeapi.ImageSpec{Image: imgName, Annotations: maps.Clone(cfg.GetImage().GetAnnotations()), UserSpecifiedImage: cfg.GetImage().GetUserSpecifiedImage()},
		imageRef:    img.id,
		command:     mapArgv(slices.Clone(cfg.GetCommand()), pm),
		args:        mapArgv(slices.Clone(cfg.GetArgs()), pm),
		workingDir:  workingDir,
		pathMap:     pm,
		env:         env,
		labels:      maps.Clone(cfg.GetLabels()),
		annotations: maps.Clone(cfg.GetAnnotations()),
		stopSignal:  cfg.GetStopSignal(),
		resources:   statusResources(cfg.GetLinux().GetResources()),
		user:        user,
		stdin:       cfg.GetStdin(),
		stdinOnce:   cfg.GetStdinOnce(),
		tty:         cfg.GetTty(),
		reservedAs:  name,
		sim:         sim,
		state:       runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt:   r.nowNano(),
	}
	if sb.logDir != "" && cfg.GetLogPath() != "" {
		c.logPath = filepath.Join(sb.logDir, cfg.GetLogPath())
	}
	if err := r.saveContainerLocked(c); err != nil {
		return nil, err
	}
	r.containers[c.id] = c
	r.ctrNames[name] = c.id
	r.metrics.containers.WithLabelValues(containerStateName(c.state)).Inc()
	r.publishLocked(c.id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, sb)
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

// StartContainer starts a CREATED container. A start that fails leaves
// the container EXITED with exit code 128 and reason StartError, as
// containerd does, and answers FailedPrecondition.
func (r *Runtime) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, fmt.Errorf("%w: container %q", ErrNotFound, req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED || c.starting {
		return nil, fmt.Errorf("%w: container %q is %s, not CREATED", ErrFailedPrecondition, c.id, containerStateName(c.state))
	}
	sb := r.sandboxes[c.sandboxID]
	if sb == nil || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("%w: sandbox %q of container %q is not ready", ErrFailedPrecondition, c.sandboxID, c.id)
	}
	var run runner
	var err error
	switch {
	case r.opts.Mode == ModeSimulated:
		if c.log, err = openLog(c.logPath, r.now); err == nil {
			run = r.startSimulated(c, c.sim.exitAfter)
		}
	case r.store != nil:
		// A shim takes a while to start (a Go binary): not under mu, so
		// the other calls go on. The container's config cannot change.
		c.starting = true
		r.mu.Unlock()
		s, serr := r.startShim(c)
		if r.afterShimStart != nil && serr == nil {
			r.afterShimStart(s)
		}
		r.mu.Lock()
		c.starting = false
		if serr == nil {
			run = s
			// Under mu: the exit is recorded only after the state below
			// is settled, however soon the container ends.
			s.watch()
		}
		err = serr
		if gone := r.containers[c.id] != c || r.closed; gone || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
			if run != nil {
				run.kill()
			}
			if gone {
				if r.closed {
					return nil, ErrShuttingDown
				}
				return nil, fmt.Errorf("%w: container %q was removed while it started", ErrNotFound, c.id)
			}
			run, err = nil, fmt.Errorf("%w: sandbox %q was stopped while the container started", ErrFailedPrecondition, sb.id)
		}
	default:
		if c.log, err = openLog(c.logPath, r.now); err == nil {
			if run, err = r.startProcess(c, c.log); err != nil {
				c.log.close()
			}
		}
	}
	if err == nil {
		c.run = run
		r.setContainerStateLocked(c, runtimeapi.ContainerState_CONTAINER_RUNNING)
		c.startedAt = r.nowNano()
		if err := r.saveContainerLocked(c); err != nil {
			// Not acknowledged, so not left running: the exit is
			// recorded as the process ends.
			run.kill()
			return nil, err
		}
		r.publishLocked(c.id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, sb)
		return &runtimeapi.StartContainerResponse{}, nil
	}
	if c.in != nil { // a shim started the container, then it had to go
		c.in.close()
		c.in = nil
	}
	now := r.nowNano()
	c.startedAt, c.finishedAt = now, now
	c.exitCode, c.reason, c.message = 128, "StartError", err.Error()
	r.setContainerStateLocked(c, runtimeapi.ContainerState_CONTAINER_EXITED)
	r.metrics.exits.WithLabelValues(c.reason).Inc()
	if serr := r.saveContainerLocked(c); serr != nil {
		r.log.Error("cannot record a failed start", "container_id", c.id, "err", serr)
	}
	r.publishLocked(c.id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, sb)
	return nil, fmt.Errorf("%w: start container %q: %w", ErrFailedPrecondition, c.id, stripClass(err))
}

// stripClass keeps a wrapped ErrFailedPrecondition from being named twice.
func stripClass(err error) error {
	if errors.Is(err, ErrFailedPrecondition) {
		return errors.New(err.Error())
	}
	return err
}

// recordExit marks c EXITED with code now; reason is derived when empty.
func (r *Runtime) recordExit(c *container, code int32, reason, message string) {
	r.recordExitAt(c, code, reason, message, 0)
}

// recordExitAt marks c EXITED with code at finishedAt (now when 0).
// After a Shutdown that left the containers running it records nothing:
// the next crisim finds out.
func (r *Runtime) recordExitAt(c *container, code int32, reason, message string, finishedAt int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || r.keep {
		return
	}
	r.exitLocked(c, code, reason, message, finishedAt)
	if err := r.saveContainerLocked(c); err != nil {
		r.log.Error("cannot record a container's exit", "container_id", c.id, "err", err)
	}
	if _, ok := r.containers[c.id]; ok {
		r.publishLocked(c.id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, r.sandboxes[c.sandboxID])
	}
}

// exitLocked marks c EXITED in memory; mu must be held.
func (r *Runtime) exitLocked(c *container, code int32, reason, message string, finishedAt int64) {
	if reason == "" {
		reason = "Completed"
		if code != 0 {
			reason = "Error"
		}
	}
	if finishedAt == 0 {
		finishedAt = r.nowNano()
	}
	c.exitCode, c.reason, c.message = code, reason, message
	c.finishedAt = finishedAt
	r.setContainerStateLocked(c, runtimeapi.ContainerState_CONTAINER_EXITED)
	r.metrics.exits.WithLabelValues(reason).Inc()
	if c.log != nil {
		c.log.close()
	}
	if c.in != nil {
		c.in.close()
		c.in = nil
	}
}

// StopContainer stops a running container: the stop signal, then SIGKILL
// after the timeout (seconds). Stopping a container that is not running,
// or unknown, is fine.
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	r.mu.Lock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil // CRI: idempotent, nothing left to stop
	}
	run, running := c.run, c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
	r.mu.Unlock()
	if !running {
		return &runtimeapi.StopContainerResponse{}, nil
	}
	timeout := max(time.Duration(req.GetTimeout())*time.Second, 0)
	if err := run.stop(ctx, timeout); err != nil {
		return nil, fmt.Errorf("stop container %q: %w", c.id, err)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer removes a container, stopping it first at once (no
// grace period) when it runs, as CRI asks: "If the container is running,
// the container must be forcibly removed." Removing an unknown container
// is fine.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	id := req.GetContainerId()
	if id == "" {
		return nil, required("container_id")
	}
	r.mu.Lock()
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return &runtimeapi.RemoveContainerResponse{}, nil
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		run := c.run
		r.mu.Unlock()
		if err := run.stop(ctx, 0); err != nil {
			return nil, fmt.Errorf("remove container %q: %w", id, err)
		}
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	if r.containers[id] == c {
		if err := r.removeContainerLocked(c); err != nil {
			return nil, err
		}
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// removeContainerLocked forgets c, on disk first; mu must be held.
func (r *Runtime) removeContainerLocked(c *container) error {
	if r.store != nil {
		if err := r.store.remove(filepath.Join("containers", c.id+".json")); err != nil {
			return err
		}
		_ = r.store.remove(filepath.Join("exits", c.id+".json"))
		_ = r.store.remove(filepath.Join("exits", c.id+".started.json"))
		_ = r.store.remove(filepath.Join("exits", c.id+".start.lock"))
		_ = r.store.remove(filepath.Join("exits", c.id+".attach.sock"))
	}
	if c.run != nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		c.run.kill() // only reachable if a start raced a sandbox removal
	}
	delete(r.containers, c.id)
	delete(r.ctrNames, c.reservedAs)
	r.metrics.containers.WithLabelValues(containerStateName(c.state)).Dec()
	r.publishLocked(c.id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, r.sandboxes[c.sandboxID])
	return nil
}

// saveContainerLocked writes c's record, when there is a state dir; mu
// must be held.
func (r *Runtime) saveContainerLocked(c *container) error {
	if r.store == nil {
		return nil
	}
	return r.store.putJSON(filepath.Join("containers", c.id+".json"), c.record())
}

func (r *Runtime) setContainerStateLocked(c *container, s runtimeapi.ContainerState) {
	r.metrics.containers.WithLabelValues(containerStateName(c.state)).Dec()
	c.state = s
	r.metrics.containers.WithLabelValues(containerStateName(c.state)).Inc()
}

// ContainerStatus reports one container.
func (r *Runtime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, fmt.Errorf("%w: container %q", ErrNotFound, req.GetContainerId())
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: containerStatus(c)}
	if req.GetVerbose() {
		resp.Info = map[string]string{"mode": string(r.opts.Mode), "sandbox_id": c.sandboxID}
	}
	return resp, nil
}

// UpdateContainerResources records a created or running container's new
// Linux resources, which its status then reports, as containerd's does
// (crisim applies no cgroups: its containers are plain processes). The
// request must carry Linux resources; an exited container is refused, as
// containerd refuses it.
func (r *Runtime) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	if req.GetLinux() == nil {
		return nil, fmt.Errorf("%w: linux resources are required", ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, fmt.Errorf("%w: container %q", ErrNotFound, req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, fmt.Errorf("%w: container %q is in %s state", ErrFailedPrecondition, c.id, c.state)
	}
	prev := c.resources
	c.resources = statusResources(req.GetLinux())
	if err := r.saveContainerLocked(c); err != nil {
		c.resources = prev
		return nil, err
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ListContainers lists containers matching the filter, oldest first.
func (r *Runtime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*runtimeapi.Container, 0, len(r.containers))
	for _, c := range r.containers {
		if !containerMatches(c, f) {
			continue
		}
		out = append(out, c.listItem())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].Id < out[j].Id
	})
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// listItem is c as ListContainers lists it: one message kept until the
// state changes (nothing else listed changes after creation), so that a
// list answer's encoder (cri/listcodec) can keep each item's encoding.
// mu must be held. The message is shared: never modify it.
func (c *container) listItem() *runtimeapi.Container {
	if c.listed == nil || c.listed.GetState() != c.state {
		c.listed = &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sandboxID,
			Metadata:     c.meta,
			Image:        c.image,
			ImageRef:     c.imageRef,
			ImageId:      c.imageRef,
			State:        c.state,
			CreatedAt:    c.createdAt,
			Labels:       c.labels,
			Annotations:  c.annotations,
		}
	}
	return c.listed
}

// ExecSync runs cmd in a running container and waits for it.
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(req.GetCmd()) == 0 {
		return nil, required("cmd")
	}
	r.mu.Lock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: container %q", ErrNotFound, req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: container %q is not running", ErrFailedPrecondition, c.id)
	}
	dir, env, user, pm := c.workingDir, c.env, c.user, c.pathMap
	r.mu.Unlock()
	if r.opts.Mode == ModeSimulated {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	return execSync(ctx, mapArgv(req.GetCmd(), pm), dir, env, user, time.Duration(req.GetTimeout())*time.Second)
}

// ReopenContainerLog reopens a running container's log file, so a
// rotated file is replaced by a new one.
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	r.mu.Lock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: container %q", ErrNotFound, req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || c.run == nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: container %q is not running", ErrFailedPrecondition, c.id)
	}
	run := c.run
	r.mu.Unlock()
	if err := run.reopenLog(ctx); err != nil {
		return nil, fmt.Errorf("reopen log of container %q: %w", c.id, err)
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}
