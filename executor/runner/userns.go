package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/userns"
	"github.com/syncpod/syncpod/internal/periodic"
)

// userNamespace sets p.userns as the kubelet's
// GetOrCreateUserNamespaceMappings: the node's user namespace
// unless host_users is false; then, once the runtime handler is known to
// run user namespaces, the range the store holds for the pod or
// a new one, committed before any CRI call uses it. It is asked for before
// the sandbox is created and before a container is, as the kubelet builds
// both configs with it.
func (p *pass) userNamespace(ctx context.Context) error {
	if p.userns != nil {
		return nil
	}
	s := p.pod.GetSpec()
	if s.HostUsers == nil || s.GetHostUsers() {
		p.userns = userns.Node()
		return nil
	}
	st, err := p.rt.Status(ctx)
	if err != nil {
		return fmt.Errorf("runtime status: %w", err)
	}
	if err := userns.HandlerSupports(st, s.GetRuntimeClassName()); err != nil {
		return err // the kubelet's message as it is
	}
	first, err := p.r.store.AllocateUserNamespace(p.pod.GetUid(), p.r.userns.First, userns.IDsPerPod, p.r.userns.Slots())
	if errors.Is(err, backoff.ErrNoUserNamespace) {
		return fmt.Errorf("create user namespace: %w", err)
	}
	if err != nil {
		return fmt.Errorf("user namespace: %w", err)
	}
	p.userns = userns.Pod(first)
	return nil
}

// ReleaseOrphanedUserNamespaces frees the range of every pod that holds
// one in the store but has no sandbox in the runtime, as the kubelet's
// housekeeping frees the ranges of pods neither it nor the runtime knows
// a range taken just before a crash, before RunPodSandbox made
// the sandbox that would use it, or kept by a pod whose sandboxes went
// while the executor was down. A pod with a sandbox, in any state, keeps
// its range: the sandbox runs with it. Each pod is checked again under
// its lock, so a pass that has taken a range and is creating the sandbox
// keeps it. It returns the pods whose ranges it freed, sorted.
func (r *Runner) ReleaseOrphanedUserNamespaces(ctx context.Context) ([]string, error) {
	held, err := r.store.UserNamespaces()
	if err != nil || len(held) == 0 {
		return nil, err
	}
	sandboxes, err := r.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	known := map[string]bool{}
	for _, sb := range sandboxes {
		known[sb.GetMetadata().GetUid()] = true
		known[sb.GetLabels()[crilabels.PodUID]] = true
	}
	var freed []string
	for _, uid := range slices.Sorted(maps.Keys(held)) {
		if known[uid] {
			continue
		}
		ok, err := r.releaseUserNamespaceIfGone(ctx, uid)
		if err != nil {
			return freed, err
		}
		if ok {
			r.log.Info("user namespace of a pod without sandboxes released", "pod_uid", uid, "host_id", held[uid])
			freed = append(freed, uid)
		}
	}
	return freed, nil
}

// releaseUserNamespaceIfGone frees uid's range when, under the pod's
// lock, the runtime lists no sandbox of the pod; it reports whether it
// did.
func (r *Runner) releaseUserNamespaceIfGone(ctx context.Context, uid string) (bool, error) {
	release, err := r.lockPod(ctx, uid)
	if err != nil {
		return false, err
	}
	defer release()
	return r.releaseUserNamespaceLocked(ctx, uid)
}

// releaseUserNamespaceLocked is releaseUserNamespaceIfGone for a caller
// that holds the pod's lock.
func (r *Runner) releaseUserNamespaceLocked(ctx context.Context, uid string) (bool, error) {
	left, err := r.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{crilabels.PodUID: uid}})
	if err != nil {
		return false, fmt.Errorf("list the sandboxes of pod %s: %w", uid, err)
	}
	if len(left) > 0 {
		return false, nil
	}
	return r.store.ReleaseUserNamespace(uid)
}

// UserNamespaceCleanupPeriod is how often RunUserNamespaceCleanup sweeps:
// a sweep with no range held makes no CRI call, one with ranges held a
// single ListPodSandbox (the kubelet's housekeeping runs every 2 s).
const UserNamespaceCleanupPeriod = 10 * time.Second

// RunUserNamespaceCleanup calls ReleaseOrphanedUserNamespaces at once and
// then every period until ctx ends, as the kubelet's housekeeping does; a
// failure (the runtime not up yet) is logged and retried at the next
// period. It returns nil when ctx ends.
func (r *Runner) RunUserNamespaceCleanup(ctx context.Context, period time.Duration) error {
	sweep := func() {
		if _, err := r.ReleaseOrphanedUserNamespaces(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("cannot release the user namespaces of pods without sandboxes", "err", err)
		}
	}
	sweep()
	periodic.Run(ctx, period, sweep)
	return nil
}
