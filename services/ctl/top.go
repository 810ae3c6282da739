package ctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func newTop(g *globals) *cobra.Command {
	var all, containers bool
	var selector string
	top := &cobra.Command{
		Use:   "top pods [NAME...]",
		Short: "CPU and memory use of pods, from the runtime's CRI stats",
		Long: "CPU (millicores) and memory (working set, MiB) of pods, summed over their\n" +
			"running containers, as the runtime reports them through the executor.",
		Example: "  syncpodctl top pods\n  syncpodctl top pods web --containers",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 || !isPods(args[0]) {
				return usagef("top supports one resource: pods")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			namespace := g.namespace
			if all {
				namespace = ""
			}
			resp, err := onPlanner(cmd.Context(), g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.ListPodStatsResponse, error) {
				return c.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{Namespace: namespace, LabelSelector: selector})
			})
			if err != nil {
				return err
			}
			stats := resp.GetStats()
			if names := args[1:]; len(names) > 0 {
				var kept []*syncpodv1.PodStats
				for _, n := range names {
					found := false
					for _, s := range stats {
						if s.GetPodName() == n {
							kept, found = append(kept, s), true
						}
					}
					if !found {
						return notFound("pods %q not found in namespace %q", n, g.namespace)
					}
				}
				stats = kept
			}
			if len(stats) == 0 {
				fmt.Fprintf(g.env.Stderr, "No resources found.\n")
				return nil
			}
			header := []string{"NAME", "CPU(cores)", "MEMORY(bytes)"}
			if containers {
				header = []string{"POD", "NAME", "CPU(cores)", "MEMORY(bytes)"}
			}
			if all {
				header = append([]string{"NAMESPACE"}, header...)
			}
			rows := [][]string{header}
			for _, s := range stats {
				var lines [][]string
				if containers {
					for _, c := range s.GetContainers() {
						lines = append(lines, []string{s.GetPodName(), c.GetName(), millicores(c.GetCpuNanoCores()), mebibytes(c.GetMemoryWorkingSetBytes())})
					}
				} else {
					lines = [][]string{{s.GetPodName(), millicores(s.GetCpuNanoCores()), mebibytes(s.GetMemoryWorkingSetBytes())}}
				}
				for _, l := range lines {
					if all {
						l = append([]string{namespaceOrDefault(s.GetPodNamespace())}, l...)
					}
					rows = append(rows, l)
				}
			}
			fmt.Fprint(g.env.Stdout, table(rows))
			return nil
		},
	}
	top.Flags().BoolVarP(&all, "all-namespaces", "A", false, "pods of every namespace")
	top.Flags().BoolVar(&containers, "containers", false, "one line per container")
	top.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. app=web")
	return top
}

// millicores is kubectl top's CPU column.
func millicores(nano uint64) string { return fmt.Sprintf("%dm", nano/1_000_000) }

// mebibytes is kubectl top's memory column.
func mebibytes(b uint64) string { return fmt.Sprintf("%dMi", b/(1<<20)) }
