package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

// createSandbox runs the pod sandbox with the planned attempt. When the
// runtime says the name is reserved (an earlier, interrupted pass created
// it), the existing sandbox is reused if ready, or stopped, removed and
// created again, so a pod never ends up with two ready sandboxes.
func (p *pass) createSandbox(ctx context.Context) bool {
	t0 := time.Now()
	if p.r.m != nil {
		p.r.m.startedPods.Inc()
	}
	fail := func(err error) bool {
		p.fatal(err)
		if p.r.m != nil {
			p.r.m.startedPodsErrors.Inc()
		}
		p.add(executorv1.Step_STEP_CREATE_SANDBOX, "", executorv1.Outcome_OUTCOME_FAILED, t0,
			withReason("CreatePodSandboxError", fmt.Sprintf("Failed to create pod sandbox: %v", err)))
		return false
	}
	// the user namespace is part of the sandbox's config.
	if err := p.userNamespace(ctx); err != nil {
		return fail(err)
	}
	cfg := p.sandboxConfig()
	if err := os.MkdirAll(cfg.GetLogDirectory(), 0o755); err != nil {
		return fail(fmt.Errorf("create pod log directory: %w", err))
	}
	// the pod cgroup is made before the sandbox, which is placed
	// in it.
	parent, err := p.ensurePodCgroup(ctx)
	if err != nil {
		return fail(fmt.Errorf("create pod cgroup: %w", err))
	}
	cfg.Linux.CgroupParent = parent
	ended, err := p.r.sandboxTurn(ctx)
	if err != nil {
		return fail(fmt.Errorf("waiting for a turn to create the sandbox: %w", err))
	}
	id, err := p.rt.RunPodSandbox(ctx, cfg, p.pod.GetSpec().GetRuntimeClassName())
	ended()
	msg := ""
	if errors.Is(err, runtimeclient.ErrNameReserved) {
		id, msg, err = p.recoverReserved(ctx, cfg)
	}
	if err != nil {
		return fail(err)
	}
	p.sandboxID = id
	if msg == "" {
		msg = fmt.Sprintf("created sandbox attempt %d", cfg.GetMetadata().GetAttempt())
	}
	p.add(executorv1.Step_STEP_CREATE_SANDBOX, id, executorv1.Outcome_OUTCOME_SUCCEEDED, t0, withMessage(msg))
	return true
}

// sandboxConfig is SandboxConfig with the planner's sandbox config hash
// as a label, the pod cgroup as cgroup parent and the node's DNS
// configuration for the pod (an unreadable resolv.conf counts as empty, as for the kubelet with
// no resolvConf).
func (p *pass) sandboxConfig() *runtimeapi.PodSandboxConfig {
	cfg := SandboxConfig(p.pod, p.actions.GetAttempt(), p.r.logDir)
	if h := p.actions.GetSandboxConfigHash(); h != "" {
		cfg.Labels[crilabels.SandboxConfigHash] = h
	}
	resolv, _ := os.ReadFile(p.r.resolvConf)
	cfg.DnsConfig = DNSConfig(p.pod, resolv)
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = p.userns
	// Every copy of the sandbox config names the pod cgroup, as the
	// kubelet's does: the runtime places a container by the config given
	// with CreateContainer.
	if m := p.r.resolvedCgroups(); m != nil {
		cfg.Linux.CgroupParent = m.Parent(p.pod)
	}
	return cfg
}

func (p *pass) recoverReserved(ctx context.Context, cfg *runtimeapi.PodSandboxConfig) (id, msg string, err error) {
	list, err := p.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{crilabels.PodUID: p.pod.GetUid()},
	})
	if err != nil {
		return "", "", err
	}
	want := cfg.GetMetadata()
	for _, sb := range list {
		md := sb.GetMetadata()
		if md.GetName() != want.GetName() || md.GetNamespace() != want.GetNamespace() ||
			md.GetUid() != want.GetUid() || md.GetAttempt() != want.GetAttempt() {
			continue
		}
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			p.r.log.Info("reusing sandbox left by an earlier pass", "pod_uid", p.pod.GetUid(), "sandbox_id", sb.GetId())
			return sb.GetId(), fmt.Sprintf("reused ready sandbox %s (name was reserved by an earlier pass)", sb.GetId()), nil
		}
		p.r.log.Info("replacing stopped sandbox left by an earlier pass", "pod_uid", p.pod.GetUid(), "sandbox_id", sb.GetId())
		if err := runtimeclient.IgnoreNotFound(p.rt.StopPodSandbox(ctx, sb.GetId())); err != nil {
			return "", "", err
		}
		if err := runtimeclient.IgnoreNotFound(p.rt.RemovePodSandbox(ctx, sb.GetId())); err != nil {
			return "", "", err
		}
		id, err := p.rt.RunPodSandbox(ctx, cfg, p.pod.GetSpec().GetRuntimeClassName())
		if err != nil {
			return "", "", err
		}
		return id, fmt.Sprintf("replaced not-ready sandbox %s left by an earlier pass", sb.GetId()), nil
	}
	return "", "", fmt.Errorf("sandbox name is reserved but no sandbox with that metadata is listed: %w", runtimeclient.ErrNameReserved)
}
