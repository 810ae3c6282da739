package ctl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// debugWait bounds how long debug -i waits for its container to run.
const debugWait = 2 * time.Minute

func newDebug(g *globals) *cobra.Command {
	var o debugOptions
	cmd := &cobra.Command{
		Use:   "debug POD --image=IMAGE [-c NAME] [--target=CONTAINER] [-i] [-t] [-- COMMAND [ARG...]]",
		Short: "Add an ephemeral container to a running pod",
		Long: "Add an ephemeral (debugging) container to a running pod, as kubectl debug does:\n" +
			"the pod's other containers keep running. --target puts it in that container's\n" +
			"process namespace. With -i it gets a standard input and syncpodctl attaches to\n" +
			"it once it runs (-t: a terminal); without -i syncpodctl returns once it is added.",
		Example: "  syncpodctl debug -it web --image=busybox:1.36 --target=app\n" +
			"  syncpodctl debug web --image=busybox:1.36 -c probe -- sh -c 'ps; sleep 3600'",
		Args: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); len(args) < 1 || dash == 0 || dash > 1 || dash < 0 && len(args) > 1 {
				return usagef("usage: debug POD --image=IMAGE [-- COMMAND [ARG...]]")
			}
			if o.image == "" {
				return usagef("--image is required")
			}
			return nil
		},
		ValidArgsFunction: g.completePodNames,
		RunE: onPodArg(func(cmd *cobra.Command, pod string, args []string) error {
			o.command = args[1:]
			return runDebug(cmd.Context(), g, pod, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.image, "image", "", "the debugging container's image (required)")
	f.StringVarP(&o.name, "container", "c", "", "the debugging container's name (default: debugger-XXXXX)")
	f.StringVar(&o.target, "target", "", "share this container's process namespace")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "keep a standard input open and attach to it")
	f.BoolVarP(&o.tty, "tty", "t", false, "give the container a terminal")
	return cmd
}

type debugOptions struct {
	image, name, target string
	command             []string
	stdin, tty          bool
}

func runDebug(ctx context.Context, g *globals, pod string, o debugOptions) error {
	rec, err := g.getPod(ctx, g.namespace, pod)
	if err != nil {
		return err
	}
	p := proto.CloneOf(rec.GetPod())
	if o.name == "" {
		o.name = freeDebugName(containerNames(rec))
		fmt.Fprintf(g.env.Stderr, "Defaulting debug container name to %s.\n", o.name)
	}
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, &syncpodv1.Container{
		Name: o.name, Image: o.image, Command: o.command, Stdin: o.stdin, Tty: o.tty, TargetContainerName: o.target,
	})
	if _, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.ApplyPodResponse, error) {
		return c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: p})
	}); err != nil {
		return err
	}
	if !o.stdin {
		return nil
	}
	if err := waitFor(ctx, g, []string{pod}, debugWait, func(_ string, r *plannerv1.PodRecord) (bool, error) {
		if r == nil {
			return false, notFound("pod %s is gone", pod)
		}
		i := slices.IndexFunc(r.GetStatus().GetEphemeralContainerStatuses(), func(cs *syncpodv1.ContainerStatus) bool { return cs.GetName() == o.name })
		if i < 0 {
			return false, nil
		}
		st := r.GetStatus().GetEphemeralContainerStatuses()[i].GetState()
		if t := st.GetTerminated(); t != nil {
			return false, fmt.Errorf("container %s exited with %d before it could be attached", o.name, t.GetExitCode())
		}
		return st.GetRunning() != nil, nil
	}); err != nil {
		return err
	}
	if o.tty {
		fmt.Fprintln(g.env.Stderr, "If you don't see a command prompt, try pressing enter.")
	}
	return runAttach(ctx, g, pod, o.name, o.stdin, o.tty)
}

// freeDebugName is kubectl's default name for a debugging container,
// "debugger-" and five random letters and digits, not one of taken.
func freeDebugName(taken []string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	for {
		b := []byte("debugger-xxxxx")
		for i := len("debugger-"); i < len(b); i++ {
			b[i] = alphabet[rand.IntN(len(alphabet))]
		}
		if !slices.Contains(taken, string(b)) {
			return string(b)
		}
	}
}
