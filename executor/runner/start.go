package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/expansion"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// startInit starts one init container; sidecar says whether it is a
// restartable one (whose failure does not stop the pass; ).
func (p *pass) startInit(ctx context.Context, cs *syncpodv1.ContainerStart) (ok, sidecar bool) {
	c, init, _ := findContainer(p.pod, cs.GetName())
	sidecar = init && isSidecar(c)
	return p.startContainer(ctx, cs, kindInit), sidecar
}

// stepOf is the step and metric label of starting a container of kind.
func stepOf(kind containerKind) (executorv1.Step, string) {
	switch kind {
	case kindInit:
		return executorv1.Step_STEP_START_INIT_CONTAINER, typeInit
	case kindEphemeral:
		return executorv1.Step_STEP_START_EPHEMERAL_CONTAINER, typeEphemeral
	}
	return executorv1.Step_STEP_START_CONTAINER, typeContainer
}

// startContainer runs the crash-loop check, ensures the image, creates and
// starts one container of the given kind (R-8 steps 6-8, R-11.3). It
// reports success.
func (p *pass) startContainer(ctx context.Context, cs *syncpodv1.ContainerStart, want containerKind) bool {
	t0 := time.Now()
	step, ctype := stepOf(want)
	name := cs.GetName()
	c, kind := kindOf(p.pod, name)
	if c == nil || kind != want {
		p.add(step, name, executorv1.Outcome_OUTCOME_FAILED, t0,
			withReason("CreateContainerConfigError", fmt.Sprintf("container %q is not in the pod spec", name)))
		return false
	}
	init := kind == kindInit
	newest, exited := newestInstances(p.observed, name)
	// the pod's image volumes are pulled before its first start.
	if !p.pullImageVolumes(ctx) {
		return false
	}

	// Crash-loop back-off. The advanced delay is committed while
	// the container is being created (the commit's fsync would otherwise
	// wait in front of every restart), and always before it starts: a
	// container never runs without its restart recorded.
	var recorded chan error
	defer func() {
		if recorded != nil {
			if err := <-recorded; err != nil {
				p.fatal(err)
			}
		}
	}()
	if exited != nil {
		key := backoff.Key{PodUID: p.pod.GetUid(), ContainerName: name, SpecHash: cs.GetSpecHash()}
		finished := exited.GetFinishedAt().AsTime()
		if exited.GetFinishedAt() == nil {
			finished = exited.GetCreatedAt().AsTime()
		}
		ref := backoff.PodRef{Name: p.pod.GetName(), Namespace: namespace(p.pod)}
		res, err := p.r.store.Check(key, ref, finished)
		if err != nil {
			p.fatal(err)
			return false
		}
		if res.InBackOff {
			p.add(step, name, executorv1.Outcome_OUTCOME_SKIPPED, t0, p.withUntil(res.Until),
				withReason("CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", res.Delay, name, podDesc(p.pod))))
			return false
		}
		recorded = make(chan error, 1)
		go func() {
			_, err := p.r.store.Next(key, ref, finished)
			recorded <- err
		}()
	}
	if p.r.m != nil {
		p.r.m.startedCtrs.WithLabelValues(ctype).Inc()
	}
	failed := func(code, msg string, opts ...stepOpt) bool {
		if p.r.m != nil {
			p.r.m.startedCtrsErrors.WithLabelValues(ctype, code).Inc()
		}
		p.add(step, name, executorv1.Outcome_OUTCOME_FAILED, t0, append([]stepOpt{withReason(code, msg)}, opts...)...)
		return false
	}
	if p.sandboxID == "" {
		return failed("CreateContainerError", "no sandbox to start the container in")
	}
	// a container that mounts an image volume whose pull failed
	// fails with that pull's reason and message, before its own image.
	if ierr, ref := p.imageVolumeFailure(c); ierr != nil {
		opts := []stepOpt{withImageVolume(ref)}
		if !ierr.until.IsZero() {
			opts = append(opts, p.withUntil(ierr.until))
		}
		return failed(ierr.reason, ierr.msg, opts...)
	}
	var createErr error
	defer func() { p.countImageVolumeMounts(c, createErr) }()
	// the container runs in the pod's user namespace, which the
	// sandbox config of its image pull names too.
	if err := p.userNamespace(ctx); err != nil {
		if p.fatal(err) {
			return false
		}
		return failed("CreateContainerConfigError", err.Error())
	}
	img, ierr := p.ensureImage(ctx, c)
	if ierr != nil {
		if p.abort != nil {
			return false
		}
		var opts []stepOpt
		if !ierr.until.IsZero() {
			opts = append(opts, p.withUntil(ierr.until))
		}
		return failed(ierr.reason, ierr.msg, opts...)
	}

	restartCount := int32(0)
	if newest != nil {
		restartCount = newest.GetRestartCount() + 1
	} else {
		// no instance left (every container restarted in place, or
		// a runtime that lost its state): the count goes on from the log
		// files the removed instances left, as the kubelet's
		// calcRestartCountByLogDir.
		restartCount = RestartCountFromLogDir(filepath.Join(PodLogDir(p.r.logDir, p.pod), name))
	}
	opts, env, err := p.containerOptions(ctx, c, img)
	if err != nil {
		if p.fatal(err) {
			return false
		}
		return failed("CreateContainerConfigError", err.Error())
	}
	cfg, err := ContainerConfig(p.pod, c, init, cs.GetSpecHash(), restartCount, opts)
	if err != nil {
		return failed("CreateContainerConfigError", err.Error())
	}
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = p.userns
	if kind == kindEphemeral {
		if err := p.ephemeralConfig(cfg, c); err != nil {
			return failed("CreateContainerConfigError", err.Error())
		}
	}
	cfg.Envs = env
	expandCommand(cfg)
	if un := p.userns; un != nil {
		// in a user namespace of its own, every mount carries the
		// pod's mappings, for the runtime to mount it idmapped: the node's
		// root-owned volume files are root's in the container, not the
		// overflow user's.
		for _, m := range cfg.GetMounts() {
			m.UidMappings, m.GidMappings = un.GetUids(), un.GetGids()
		}
	}
	sbCfg := p.sandboxConfig()
	if err := os.MkdirAll(filepath.Join(sbCfg.GetLogDirectory(), name), 0o755); err != nil {
		return failed("CreateContainerConfigError", fmt.Sprintf("create container log directory: %v", err))
	}
	id, err := p.rt.CreateContainer(ctx, p.sandboxID, cfg, sbCfg)
	if err != nil {
		createErr = err
		if p.fatal(err) {
			return false
		}
		return failed("CreateContainerError", runtimeMessage(err))
	}
	if recorded != nil {
		err := <-recorded
		recorded = nil
		if err != nil {
			// Not started, so not left created either.
			_ = runtimeclient.IgnoreNotFound(p.rt.RemoveContainer(ctx, id))
			p.fatal(err)
			return false
		}
	}
	if err := p.rt.StartContainer(ctx, id); err != nil {
		if p.fatal(err) {
			return false
		}
		return failed("RunContainerError", runtimeMessage(err), withContainer(id))
	}
	if msg, ok := p.postStart(ctx, c, id); !ok {
		return failed(ReasonPostStartHookError, msg, withContainer(id))
	}
	p.add(step, name, executorv1.Outcome_OUTCOME_SUCCEEDED, t0, withContainer(id),
		withMessage(fmt.Sprintf("Started container %s (restart count %d)", name, restartCount)))
	return true
}

// ephemeralConfig marks cfg as an ephemeral container's and, when c names
// a target container, puts it in that container's PID namespace as the
// kubelet does: the target is the newest instance of that name in
// any state, and only a container with a PID namespace of its own (no
// shared process namespace, no host PID) is given one.
func (p *pass) ephemeralConfig(cfg *runtimeapi.ContainerConfig, c *syncpodv1.Container) error {
	cfg.Labels[crilabels.ContainerType] = crilabels.ContainerTypeEphemeral
	target := c.GetTargetContainerName()
	if target == "" {
		return nil
	}
	t, _ := newestInstances(p.observed, target)
	if t == nil {
		return fmt.Errorf("unable to find target container %s", target)
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns != nil && ns.GetPid() == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid = runtimeapi.NamespaceMode_TARGET
		ns.TargetId = t.GetId()
	}
	return nil
}

// newestInstances returns the newest instance named name and the newest
// EXITED one (nil when none).
func newestInstances(o *syncpodv1.ObservedPod, name string) (newest, exited *syncpodv1.ObservedContainer) {
	for _, oc := range sortedContainers(o) {
		if oc.GetName() != name {
			continue
		}
		if newest == nil {
			newest = oc
		}
		if exited == nil && oc.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			exited = oc
		}
	}
	return newest, exited
}

// expandCommand expands $(VAR) in the config's command and args against
// its final environment, as the kubelet does before CreateContainer.
func expandCommand(cfg *runtimeapi.ContainerConfig) {
	vars := make(map[string]string, len(cfg.GetEnvs()))
	for _, kv := range cfg.GetEnvs() {
		vars[kv.GetKey()] = string(kv.GetValue())
	}
	lookup := expansion.MapLookup(vars)
	cfg.Command, cfg.Args = expansion.All(cfg.GetCommand(), lookup), expansion.All(cfg.GetArgs(), lookup)
}

// runtimeMessage is what the kubelet reports of a CreateContainer or
// StartContainer the runtime refused: the message of the gRPC
// status the runtime answered, without its "rpc error: code = ..." frame;
// an error that carries no status is reported whole.
func runtimeMessage(err error) string {
	var carrier interface{ GRPCStatus() *status.Status }
	if errors.As(err, &carrier) {
		if st := carrier.GRPCStatus(); st != nil {
			return st.Message()
		}
	}
	return err.Error()
}
