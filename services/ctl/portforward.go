package ctl

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/spf13/cobra"

	"github.com/syncpod/syncpod/planner/plannerclient"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/services/ctl/cliargs"
)

func newPortForward(g *globals) *cobra.Command {
	var addresses []string
	cmd := &cobra.Command{
		Use:   "port-forward POD [LOCAL:]REMOTE...",
		Short: "Forward local ports to a pod's ports",
		Long: "Listen on local ports (127.0.0.1 unless --address says otherwise) and carry\n" +
			"each connection through the planner and the executor to the pod's port, via\n" +
			"the runtime's streaming server. :REMOTE picks a free local port. Runs until\n" +
			"Ctrl-C.",
		Example: "  syncpodctl port-forward web 8080:80\n  syncpodctl port-forward pod/web :80",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("usage: port-forward POD [LOCAL:]REMOTE...")
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return g.completePods(args)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: onPodArg(func(cmd *cobra.Command, pod string, args []string) error {
			ports, err := cliargs.ParsePorts(args[1:])
			if err != nil {
				return err
			}
			return runPortForward(cmd.Context(), g, pod, addresses, ports)
		}),
	}
	cmd.Flags().StringSliceVar(&addresses, "address", []string{"127.0.0.1"}, "local addresses to listen on (comma separated)")
	return cmd
}

func runPortForward(ctx context.Context, g *globals, pod string, addresses []string, ports []cliargs.PortPair) error {
	if _, err := g.getPod(ctx, g.namespace, pod); err != nil {
		return err
	}
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	var mu sync.Mutex
	printf := func(w io.Writer, format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, format, args...)
	}
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, p := range ports {
		for _, addr := range addresses {
			l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p.Local)))
			if err != nil {
				return fmt.Errorf("unable to listen on %s port %d: %w", addr, p.Local, err)
			}
			listeners = append(listeners, l)
			printf(g.env.Stdout, "Forwarding from %s -> %d\n", l.Addr(), p.Remote)
			wg.Add(1)
			go func(remote int) {
				defer wg.Done()
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					printf(g.env.Stdout, "Handling connection for %d\n", remote)
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := forwardConn(ctx, client, podRef(g.namespace, pod), remote, c); err != nil {
							printf(g.env.Stderr, "error forwarding port %d: %v\n", remote, err)
						}
					}()
				}
			}(p.Remote)
		}
	}
	<-ctx.Done()
	for _, l := range listeners {
		_ = l.Close()
	}
	return nil
}

// forwardConn carries one local connection over a PortForward stream; an
// error after ctx ended (the user stopped port-forward) is no error.
func forwardConn(ctx context.Context, client plannerv1.PlannerServiceClient, pod *plannerv1.PodRef, port int, c net.Conn) error {
	if err := plannerclient.PortForward(ctx, client, pod, int32(port), c); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
