package runtimeclient

import (
	"context"

	"github.com/go-logr/logr"
	internalapi "k8s.io/cri-api/pkg/apis"
)

// Service returns the runtime service behind r, connecting if needed, for
// the calls the executor makes outside the instrumented set: the
// streaming ones (Exec, Attach, PortForward), whose URL is followed by a
// long-lived session, and stats.
func (r *Runtime) Service(ctx context.Context) (internalapi.RuntimeService, error) { return r.get(ctx) }

// ClientContext is ctx carrying the logger the CRI client library logs
// to (WithClientLogger), for the calls made on Service's answer; ctx
// itself without one.
func (r *Runtime) ClientContext(ctx context.Context) context.Context {
	if r.c.client != nil {
		return logr.NewContext(ctx, *r.c.client)
	}
	return ctx
}
