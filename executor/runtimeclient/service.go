package runtimeclient

import (
	"context"

	internalapi "k8s.io/cri-api/pkg/apis"
)

// Service returns the runtime service behind r, connecting if needed, for
// the calls the executor makes outside the instrumented set: the
// streaming ones (Exec, Attach, PortForward), whose URL is followed by a
// long-lived session, and stats.
func (r *Runtime) Service(ctx context.Context) (internalapi.RuntimeService, error) { return r.get(ctx) }
