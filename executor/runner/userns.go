package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/userns"
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
