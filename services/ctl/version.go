package ctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/syncpod/syncpod/services/server"
)

func newVersion(g *globals) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "The client's version and whether each server answers",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(g.env.Stdout, "Client Version: %s\n", server.Version)
			if clientOnly {
				return nil
			}
			failed := false
			for _, s := range []struct{ name, addr string }{{"Planner", g.server}, {"Executor", g.executor}, {"PLEG", g.pleg}} {
				state, err := serverHealth(cmd.Context(), g, s.addr)
				if err != nil {
					failed = true
					state = "unreachable: " + err.Error()
				}
				fmt.Fprintf(g.env.Stdout, "%s (%s): %s\n", s.name, s.addr, state)
			}
			if failed {
				return exitError{exitFailure}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "only the client version")
	return cmd
}

// serverHealth asks a server's grpc.health.v1 service for its state.
func serverHealth(ctx context.Context, g *globals, addr string) (string, error) {
	conn, closer, err := g.env.Dial(addr)
	if err != nil {
		return "", err
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return "", err
	}
	return resp.GetStatus().String(), nil
}
