package crisim

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sort"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunPodSandbox creates a READY sandbox.
func (r *Runtime) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	if err := validateSandboxConfig(cfg); err != nil {
		return nil, err
	}
	if u := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); u != nil && u.GetMode() == runtimeapi.NamespaceMode_POD && !r.userNamespaces() {
		return nil, fmt.Errorf("%w: config.linux.security_context.namespace_options.userns_options.mode: POD is not supported: "+
			"crisim runs containers as host processes in the node's user namespace; run pods with hostUsers: false on containerd", ErrInvalid)
	}
	md := cfg.GetMetadata()
	name := fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt())
	nsOpts := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()

	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	if owner, ok := r.sbNames[name]; ok {
		return nil, fmt.Errorf("%w: failed to reserve sandbox name %q: name %q is reserved for %q", ErrReserved, name, name, owner)
	}
	sb := &sandbox{
		id:          newID(),
		meta:        cloneSandboxMeta(md),
		labels:      maps.Clone(cfg.GetLabels()),
		annotations: maps.Clone(cfg.GetAnnotations()),
		logDir:      cfg.GetLogDirectory(),
		hostNetwork: nsOpts.GetNetwork() == runtimeapi.NamespaceMode_NODE,
		nsOptions:   cloneNSOptions(nsOpts),
		handler:     req.GetRuntimeHandler(),
		reservedAs:  name,
		state:       runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt:   r.nowNano(),
	}
	if !sb.hostNetwork {
		ip, err := r.allocIP()
		if err != nil {
			return nil, err
		}
		sb.ip = ip
	}
	if err := r.saveSandboxLocked(sb); err != nil {
		if sb.ip.IsValid() {
			delete(r.ips, sb.ip)
		}
		return nil, err
	}
	r.sandboxes[sb.id] = sb
	r.sbNames[name] = sb.id
	r.metrics.sandboxes.WithLabelValues(sandboxStateName(sb.state)).Inc()
	r.publishLocked(sb.id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, sb)
	r.publishLocked(sb.id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, sb)
	r.log.Debug("sandbox ready", "sandbox_id", sb.id, "name", name, "ip", sb.ip.String())
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.id}, nil
}

// StopPodSandbox kills the sandbox's running containers and marks it
// NOTREADY. Stopping a stopped or unknown sandbox is fine.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, required("pod_sandbox_id")
	}
	if err := r.stopSandbox(ctx, req.GetPodSandboxId()); err != nil && !isNotFound(err) {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (r *Runtime) stopSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("%w: sandbox %q", ErrNotFound, id)
	}
	var runs []runner
	for _, c := range r.containers {
		if c.sandboxID == id && c.run != nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			runs = append(runs, c.run)
		}
	}
	r.mu.Unlock()
	for _, run := range runs {
		if err := run.stop(ctx, 0); err != nil {
			return fmt.Errorf("stop sandbox %q: %w", id, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY && r.sandboxes[id] == sb {
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		if err := r.saveSandboxLocked(sb); err != nil {
			sb.state = runtimeapi.PodSandboxState_SANDBOX_READY
			return err
		}
		sb.state = runtimeapi.PodSandboxState_SANDBOX_READY
		r.metrics.sandboxes.WithLabelValues(sandboxStateName(sb.state)).Dec()
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		r.metrics.sandboxes.WithLabelValues(sandboxStateName(sb.state)).Inc()
		r.publishLocked(sb.id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, sb)
	}
	return nil
}

// RemovePodSandbox stops the sandbox, then removes it and all its
// containers. Removing an unknown sandbox is fine.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	id := req.GetPodSandboxId()
	if id == "" {
		return nil, required("pod_sandbox_id")
	}
	if err := r.stopSandbox(ctx, id); err != nil {
		if isNotFound(err) {
			return &runtimeapi.RemovePodSandboxResponse{}, nil
		}
		return nil, err
	}
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	if !ok {
		r.mu.Unlock()
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	var ids []string
	var runs []runner
	for cid, c := range r.containers {
		if c.sandboxID == id {
			ids = append(ids, cid)
			if c.run != nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				runs = append(runs, c.run) // started after the stop above
			}
		}
	}
	r.mu.Unlock()
	for _, run := range runs {
		if err := run.stop(ctx, 0); err != nil {
			return nil, fmt.Errorf("remove sandbox %q: %w", id, err)
		}
	}
	sort.Strings(ids)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cid := range ids {
		if c, ok := r.containers[cid]; ok {
			if err := r.removeContainerLocked(c); err != nil {
				return nil, err
			}
		}
	}
	if r.sandboxes[id] != sb {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if r.store != nil {
		if err := r.store.remove(filepath.Join("sandboxes", id+".json")); err != nil {
			return nil, err
		}
	}
	delete(r.sandboxes, id)
	delete(r.sbNames, sb.reservedAs)
	if sb.ip.IsValid() {
		delete(r.ips, sb.ip)
	}
	r.metrics.sandboxes.WithLabelValues(sandboxStateName(sb.state)).Dec()
	r.publishLocked(sb.id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, sb)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus reports one sandbox; verbose adds its containers'
// statuses.
func (r *Runtime) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, fmt.Errorf("%w: sandbox %q", ErrNotFound, req.GetPodSandboxId())
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: r.sandboxStatusLocked(sb), Timestamp: r.nowNano()}
	if req.GetVerbose() {
		resp.ContainersStatuses = r.sandboxContainerStatusesLocked(sb.id)
		resp.Info = map[string]string{"mode": string(r.opts.Mode)}
	}
	return resp, nil
}

// ListPodSandbox lists sandboxes matching the filter, oldest first.
func (r *Runtime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*runtimeapi.PodSandbox, 0, len(r.sandboxes))
	for _, sb := range r.sandboxes {
		if !sandboxMatches(sb, f) {
			continue
		}
		out = append(out, sb.listItem())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].Id < out[j].Id
	})
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

// listItem is sb as ListPodSandbox lists it, kept until its state
// changes (see container.listItem). mu must be held; never modify it.
func (sb *sandbox) listItem() *runtimeapi.PodSandbox {
	if sb.listed == nil || sb.listed.GetState() != sb.state {
		sb.listed = &runtimeapi.PodSandbox{
			Id:             sb.id,
			Metadata:       sb.meta,
			State:          sb.state,
			CreatedAt:      sb.createdAt,
			Labels:         sb.labels,
			Annotations:    sb.annotations,
			RuntimeHandler: sb.handler,
		}
	}
	return sb.listed
}

// saveSandboxLocked writes sb's record, when there is a state dir; mu must
// be held.
func (r *Runtime) saveSandboxLocked(sb *sandbox) error {
	if r.store == nil {
		return nil
	}
	return r.store.putJSON(filepath.Join("sandboxes", sb.id+".json"), sb.record())
}
