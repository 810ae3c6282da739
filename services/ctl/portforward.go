package ctl

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/syncpod/syncpod/planner/plannerclient"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// portPair is one LOCAL:REMOTE of port-forward.
type portPair struct{ local, remote int }

// parsePorts reads "8080", "8080:80" and ":80" (a free local port).
func parsePorts(args []string) ([]portPair, error) {
	var out []portPair
	for _, a := range args {
		l, r, found := strings.Cut(a, ":")
		if !found {
			r = l
		}
		remote, err := strconv.Atoi(r)
		if err != nil || remote < 1 || remote > 65535 {
			return nil, usagef("port %q: the remote port must be 1-65535", a)
		}
		local := 0
		if l != "" {
			if local, err = strconv.Atoi(l); err != nil || local < 0 || local > 65535 {
				return nil, usagef("port %q: the local port must be 0-65535", a)
			}
		}
		out = append(out, portPair{local, remote})
	}
	return out, nil
}

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
			ports, err := parsePorts(args[1:])
			if err != nil {
				return err
			}
			return runPortForward(cmd.Context(), g, pod, addresses, ports)
		}),
	}
	cmd.Flags().StringSliceVar(&addresses, "address", []string{"127.0.0.1"}, "local addresses to listen on (comma separated)")
	return cmd
}

func runPortForward(ctx context.Context, g *globals, pod string, addresses []string, ports []portPair) error {
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
			l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p.local)))
			if err != nil {
				return fmt.Errorf("unable to listen on %s port %d: %w", addr, p.local, err)
			}
			listeners = append(listeners, l)
			printf(g.env.Stdout, "Forwarding from %s -> %d\n", l.Addr(), p.remote)
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
			}(p.remote)
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
