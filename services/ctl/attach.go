package ctl

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/syncpod/syncpod/planner/plannerclient"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

func newAttach(g *globals) *cobra.Command {
	var container string
	var stdin, tty bool
	cmd := &cobra.Command{
		Use:   "attach POD [-c CONTAINER] [-i] [-t]",
		Short: "Attach to a running container's own process",
		Long: "Attach to the process a running container runs: see its output, and with -i\n" +
			"feed its standard input, which needs a container created with stdin: true\n" +
			"(-t: tty: true). Leaving (Ctrl-C) does not stop it; with stdinOnce: true the\n" +
			"container's input closes when the first attach ends.",
		Example: "  syncpodctl attach -it web -c shell",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("usage: attach POD [-c CONTAINER] [-i] [-t]")
			}
			return nil
		},
		ValidArgsFunction: g.completePodNames,
		RunE: onPodArg(func(cmd *cobra.Command, pod string, args []string) error {
			ctx := cmd.Context()
			container, err := defaultContainer(ctx, g, pod, container)
			if err != nil {
				return err
			}
			return runAttach(ctx, g, pod, container, stdin, tty)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&container, "container", "c", "", "the container (default: the pod's first)")
	f.BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the process")
	f.BoolVarP(&tty, "tty", "t", false, "the container has a terminal")
	return cmd
}

// runAttach attaches to container of pod until the session ends.
func runAttach(ctx context.Context, g *globals, pod, container string, stdin, tty bool) error {
	return runPlannerSession(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerclient.Session, error) {
		return plannerclient.Attach(ctx, c, &plannerv1.AttachStart{Pod: podRef(g.namespace, pod), Container: container, Stdin: stdin, Tty: tty})
	}, stdin, tty)
}
