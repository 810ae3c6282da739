package ctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

func newBackoffs(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backoffs list|reset",
		Short: "Crash-loop back-offs held by the executor",
		Args:  func(_ *cobra.Command, args []string) error { return usagef("backoffs needs a command: list or reset") },
		RunE:  func(*cobra.Command, []string) error { return nil },
	}
	var container, podUID, output string
	list := &cobra.Command{
		Use:     "list [POD] [-c CONTAINER]",
		Aliases: []string{"ls"},
		Short:   "List crash-loop back-offs, of every pod or of one (by name or uid)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("backoffs list takes at most one pod")
			}
			return nil
		},
		ValidArgsFunction: g.completePodNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return usagef("-o %q: want json or yaml", output)
			}
			uid := podUID
			if len(args) == 1 {
				var err error
				if uid, err = g.resolvePod(cmd.Context(), args[0]); err != nil {
					return err
				}
			}
			return listBackoffs(cmd.Context(), g, uid, container, output)
		},
	}
	list.Flags().StringVarP(&container, "container", "c", "", "only this container")
	list.Flags().StringVar(&podUID, "pod", "", "only this pod uid")
	list.Flags().StringVarP(&output, "output", "o", "", "output: json or yaml")
	var resetContainer string
	reset := &cobra.Command{
		Use:   "reset POD [-c CONTAINER]",
		Short: "Clear a crash loop so the container restarts now (POD is a name or a uid)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("usage: backoffs reset POD [-c CONTAINER]")
			}
			return nil
		},
		ValidArgsFunction: g.completePodNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &executorv1.ResetBackoffRequest{ContainerName: resetContainer}
			if len(args) == 2 {
				if resetContainer != "" && resetContainer != args[1] {
					return usagef("container named twice: %q and -c %q", args[1], resetContainer)
				}
				req.ContainerName = args[1]
			}
			uid, err := g.resolvePod(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			req.PodUid = uid
			resp, err := onExecutor(cmd.Context(), g, func(ctx context.Context, c executorv1.ExecutorServiceClient) (*executorv1.ResetBackoffResponse, error) {
				return c.ResetBackoff(ctx, req)
			})
			if err != nil {
				return err
			}
			noun := "entries"
			if resp.GetRemoved() == 1 {
				noun = "entry"
			}
			fmt.Fprintf(g.env.Stdout, "%d back-off %s cleared\n", resp.GetRemoved(), noun)
			return nil
		},
	}
	reset.Flags().StringVarP(&resetContainer, "container", "c", "", "only this container")
	cmd.AddCommand(list, reset)
	return cmd
}

// resolvePod turns a pod name (in --namespace) or uid into a uid. A uid
// the planner no longer knows is passed through: the executor may still
// hold back-offs of it.
func (g *globals) resolvePod(ctx context.Context, arg string) (string, error) {
	rec, err := g.getPod(ctx, g.namespace, arg)
	if err == nil {
		return rec.GetPod().GetUid(), nil
	}
	if status.Code(err) != codes.NotFound {
		return "", err
	}
	resp, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.GetPodResponse, error) {
		return c.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Uid: arg}})
	})
	if err == nil {
		return resp.GetRecord().GetPod().GetUid(), nil
	}
	if status.Code(err) != codes.NotFound {
		return "", err
	}
	if !looksLikeUID(arg) {
		return "", notFound("pods %q not found in namespace %q", arg, g.namespace)
	}
	return arg, nil
}

// looksLikeUID reports a string shaped like a UUID.
func looksLikeUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f'):
		default:
			return false
		}
	}
	return true
}

func listBackoffs(ctx context.Context, g *globals, pod, container, output string) error {
	resp, err := onExecutor(ctx, g, func(ctx context.Context, c executorv1.ExecutorServiceClient) (*executorv1.ListBackoffsResponse, error) {
		return c.ListBackoffs(ctx, &executorv1.ListBackoffsRequest{PodUid: pod})
	})
	if err != nil {
		return err
	}
	if container != "" {
		var kept []*executorv1.BackoffEntry
		for _, e := range resp.GetEntries() {
			if e.GetContainerName() == container {
				kept = append(kept, e)
			}
		}
		resp = &executorv1.ListBackoffsResponse{Entries: kept}
	}
	if output != "" {
		return printMessage(g.env.Stdout, resp, output)
	}
	if len(resp.GetEntries()) == 0 {
		fmt.Fprintln(g.env.Stderr, "No back-offs.")
		return nil
	}
	now := g.env.Now()
	rows := [][]string{{"POD", "CONTAINER", "DELAY", "RETRY IN", "POD UID"}}
	for _, e := range resp.GetEntries() {
		retry := "-"
		if u := e.GetBackoffUntil(); u != nil && u.AsTime().After(now) {
			retry = humanDuration(u.AsTime().Sub(now))
		}
		rows = append(rows, []string{namespaceOrDefault(e.GetPodNamespace()) + "/" + e.GetPodName(), e.GetContainerName(), e.GetDelay().AsDuration().String(), retry, e.GetPodUid()})
	}
	fmt.Fprint(g.env.Stdout, table(rows))
	return nil
}
