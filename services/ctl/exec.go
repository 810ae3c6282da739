package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/syncpod/syncpod/planner/plannerclient"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func newExec(g *globals) *cobra.Command {
	var container string
	var stdin, tty bool
	cmd := &cobra.Command{
		Use:   "exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]",
		Short: "Run a command in a running container",
		Long: "Run a command in a running container, through the planner and the executor to\n" +
			"the runtime's streaming server. -i passes standard input, -t gives the command\n" +
			"a terminal (with -i, this terminal is put in raw mode). syncpodctl exits with\n" +
			"the command's exit code.",
		Example: "  syncpodctl exec web -- ls /\n  syncpodctl exec -it web -c app -- sh",
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				if len(args) < 2 {
					return usagef("usage: exec POD [-c CONTAINER] -- COMMAND [ARG...]")
				}
				return nil
			}
			if dash != 1 || len(args) < 2 {
				return usagef("usage: exec POD [-c CONTAINER] -- COMMAND [ARG...]")
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return g.completePods(args)
			}
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: onPodArg(func(cmd *cobra.Command, pod string, args []string) error {
			return runExec(cmd.Context(), g, pod, container, args[1:], stdin, tty)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&container, "container", "c", "", "the container (default: the pod's first)")
	f.BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the command")
	f.BoolVarP(&tty, "tty", "t", false, "give the command a terminal")
	return cmd
}

func runExec(ctx context.Context, g *globals, pod, container string, command []string, withStdin, tty bool) error {
	container, err := defaultContainer(ctx, g, pod, container)
	if err != nil {
		return err
	}
	return runPlannerSession(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerclient.Session, error) {
		return plannerclient.Exec(ctx, c, &plannerv1.ExecStart{Pod: podRef(g.namespace, pod), Container: container, Command: command, Stdin: withStdin, Tty: tty})
	}, withStdin, tty)
}

// runPlannerSession opens an interactive session (exec, attach) on the
// planner with open and carries the local terminal or standard streams
// over it until it ends (runSession).
func runPlannerSession(ctx context.Context, g *globals, open func(context.Context, plannerv1.PlannerServiceClient) (*plannerclient.Session, error), withStdin, tty bool) error {
	termFd := localTerminal(g, withStdin, tty)
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := open(ctx, client)
	if err != nil {
		return err
	}
	return runSession(ctx, g, s, withStdin, tty, termFd)
}

// defaultContainer is container, or the pod's first when it is empty
// (said on stderr when the pod has several).
func defaultContainer(ctx context.Context, g *globals, pod, container string) (string, error) {
	if container != "" {
		return container, nil
	}
	rec, err := g.getPod(ctx, g.namespace, pod)
	if err != nil {
		return "", err
	}
	main := rec.GetPod().GetSpec().GetContainers()
	if len(main) == 0 {
		return "", notFound("pod %s has no containers", pod)
	}
	if names := containerNames(rec); len(names) > 1 {
		fmt.Fprintf(g.env.Stderr, "Defaulted container %q out of: %s\n", main[0].GetName(), joinNames(names))
	}
	return main[0].GetName(), nil
}

// localTerminal returns the file descriptor of our standard input when a
// tty session can use it as a terminal (raw mode, size), or -1.
func localTerminal(g *globals, withStdin, tty bool) int {
	in, _ := g.env.Stdin.(*os.File)
	if tty && in != nil && term.IsTerminal(int(in.Fd())) {
		return int(in.Fd())
	}
	if tty && withStdin {
		fmt.Fprintln(g.env.Stderr, "Unable to use a TTY - input is not a terminal or the right kind of file")
	}
	return -1
}

// runSession carries the local terminal or standard streams over an
// interactive session until it ends, and turns its exit code into
// syncpodctl's.
func runSession(ctx context.Context, g *globals, s *plannerclient.Session, withStdin, tty bool, termFd int) error {
	// The stream runs on the caller's context: whether the caller left is
	// asked of that one. A child context is cancelled only after its
	// parent's Done channel closes, so the stream's error can come before
	// the child says it was cancelled.
	left := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	send := s.Send
	if termFd >= 0 {
		if withStdin {
			state, err := term.MakeRaw(termFd)
			if err == nil {
				defer func() { _ = term.Restore(termFd, state) }()
			}
		}
		sendSize := func() {
			if w, h, err := term.GetSize(termFd); err == nil {
				_ = send(&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Resize{Resize: &syncpodv1.TerminalSize{Width: uint32(w), Height: uint32(h)}}})
			}
		}
		sendSize()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-winch:
					sendSize()
				}
			}
		}()
	}
	if withStdin {
		go plannerclient.SendStdin(g.env.Stdin, send)
	} else {
		_ = s.CloseSend()
	}
	for {
		out, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if left.Err() != nil {
				return nil
			}
			return err
		}
		switch o := out.GetOutput().(type) {
		case *syncpodv1.StreamOutput_Stdout:
			_, _ = g.env.Stdout.Write(o.Stdout)
		case *syncpodv1.StreamOutput_Stderr:
			_, _ = g.env.Stderr.Write(o.Stderr)
		case *syncpodv1.StreamOutput_ExitCode:
			if o.ExitCode != 0 {
				if termFd < 0 {
					fmt.Fprintf(g.env.Stderr, "command terminated with exit code %d\n", o.ExitCode)
				}
				return exitError{int(o.ExitCode)}
			}
			return nil
		}
	}
}
