package node

import (
	"context"
	"log/slog"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// ShutdownOnSignal runs the node's graceful shutdown when term delivers
// (the agent's SIGTERM, with --shutdown-on-sigterm): the planner's
// ShutdownNode, whose answer comes once the last priority group is done,
// then stop, which ends the agent. The agent keeps posting the
// Node's status meanwhile, so the API server sees it not ready.
// It returns when ctx ends or after stop.
func ShutdownOnSignal[T any](ctx context.Context, term <-chan T, planner plannerv1.PlannerServiceClient, logger *slog.Logger, stop func()) {
	select {
	case <-ctx.Done():
		return
	case <-term:
	}
	logger.Info("SIGTERM: shutting the node's pods down gracefully before exiting")
	resp, err := planner.ShutdownNode(ctx, &plannerv1.ShutdownNodeRequest{})
	if err != nil {
		logger.Error("graceful node shutdown failed; exiting anyway", "err", err)
	} else {
		st := resp.GetShutdown()
		logger.Info("graceful node shutdown done", "groups", len(st.GetGroups()),
			"took", st.GetEndedAt().AsTime().Sub(st.GetStartedAt().AsTime()).String())
	}
	stop()
}
