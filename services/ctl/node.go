package ctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

func newNode(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "The node as a whole: its graceful shutdown",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("node needs a subcommand: shutdown or status")
		},
	}
	cmd.AddCommand(newNodeShutdown(g), newNodeStatus(g))
	return cmd
}

func newNodeShutdown(g *globals) *cobra.Command {
	var (
		cancel  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "shutdown",
		Short: "Shut the node's pods down gracefully, as the kubelet does before the machine stops",
		Long: "Shut the node's pods down gracefully, as the kubelet does when logind announces\n" +
			"a shutdown: the planner stops admitting pods, ends the running ones by priority,\n" +
			"lowest first, each group within its grace period (syncpod-planner's\n" +
			"--shutdown-grace-period flags), and each ends Failed with reason Terminated.\n" +
			"The command waits until the last group is done and prints the groups. The\n" +
			"planner must have a shutdown grace period configured. After it starts again,\n" +
			"the pods ended restart per their restart policy. --cancel admits pods again.",
		Example: "  syncpodctl node shutdown\n  syncpodctl node shutdown --cancel",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runNodeShutdown(cmd.Context(), g, cancel, timeout)
		},
	}
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel: admit pods again (the pods already ended stay so)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long to wait for the shutdown (it goes on if the wait ends)")
	return cmd
}

func newNodeStatus(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "The node's pressure conditions, whether it is shutting down, and its shutdown's groups",
		Long: "The node's pressure conditions (MemoryPressure, DiskPressure, PIDPressure) as the\n" +
			"planner's eviction manager last found them, with the signals under pressure, then\n" +
			"whether the node is shutting down and the shutdown's groups.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, closer, err := g.planner()
			if err != nil {
				return err
			}
			defer closer.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), g.requestTimeout)
			defer cancel()
			conds, err := client.GetNodeConditions(ctx, &plannerv1.GetNodeConditionsRequest{})
			if err != nil {
				return err
			}
			resp, err := client.GetNodeShutdown(ctx, &plannerv1.GetNodeShutdownRequest{})
			if err != nil {
				return err
			}
			printConditions(g.env.Stdout, conds)
			printShutdown(g.env.Stdout, resp.GetShutdown())
			return nil
		},
	}
}

func runNodeShutdown(ctx context.Context, g *globals, cancelIt bool, timeout time.Duration) error {
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	resp, err := client.ShutdownNode(ctx, &plannerv1.ShutdownNodeRequest{Cancel: cancelIt})
	if err != nil {
		return err
	}
	if cancelIt {
		fmt.Fprintln(g.env.Stdout, "node shutdown cancelled: pods are admitted again")
		return nil
	}
	printShutdown(g.env.Stdout, resp.GetShutdown())
	return nil
}

// printConditions prints the node's pressure conditions, as kubectl
// describe node lists a Node's: type, status, reason, message.
func printConditions(w io.Writer, resp *plannerv1.GetNodeConditionsResponse) {
	if !resp.GetEvictionManager() {
		fmt.Fprintln(w, "pressure: not measured (the planner's eviction manager is off: no --eviction-hard or --eviction-soft)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range resp.GetConditions() {
		status := "False"
		if c.GetStatus() {
			status = "True"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.GetType(), status, c.GetReason(), c.GetMessage())
	}
	_ = tw.Flush()
}

// printShutdown prints a shutdown's state and its groups.
func printShutdown(w io.Writer, st *plannerv1.NodeShutdown) {
	switch st.GetPhase() {
	case plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_UNSPECIFIED:
		fmt.Fprintln(w, "node is not shutting down")
		return
	case plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_SHUTTING_DOWN:
		fmt.Fprintf(w, "node is shutting down (trigger %s, since %s)\n", st.GetTrigger(), st.GetStartedAt().AsTime().Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "node shutdown done in %s (trigger %s)\n",
			st.GetEndedAt().AsTime().Sub(st.GetStartedAt().AsTime()).Round(time.Millisecond), st.GetTrigger())
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PRIORITY\tBUDGET\tTOOK\tTIMED OUT\tPODS")
	for _, g := range st.GetGroups() {
		var pods []string
		for _, p := range g.GetPods() {
			pods = append(pods, fmt.Sprintf("%s/%s(%ds)", p.GetNamespace(), p.GetName(), p.GetGracePeriodSeconds()))
		}
		took := "-"
		if g.GetEndedAt() != nil {
			took = g.GetEndedAt().AsTime().Sub(g.GetStartedAt().AsTime()).Round(time.Millisecond).String()
		}
		list := strings.Join(pods, ",")
		if list == "" {
			list = "<none>"
		}
		fmt.Fprintf(tw, "%d\t%ds\t%s\t%v\t%s\n", g.GetPriority(), g.GetGracePeriodSeconds(), took, g.GetTimedOut(), list)
	}
	_ = tw.Flush()
}
