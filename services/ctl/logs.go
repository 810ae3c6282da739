package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/types/known/timestamppb"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

type logsOptions struct {
	container  string
	follow     bool
	tail       int64
	since      time.Duration
	sinceTime  string
	timestamps bool
	previous   bool
	all        bool
	prefix     bool
}

func newLogs(g *globals) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs POD [-c CONTAINER] [-f] [--tail N] [--since 5m] [--previous]",
		Short: "Print or follow a container's log, read by the executor from the runtime's log file",
		Long: "Print a container's log. The planner carries the request to the executor,\n" +
			"which reads the CRI log file the runtime reports; partial lines are joined.\n" +
			"Without -c, a pod with several containers shows its first one.",
		Example: "  syncpodctl logs web -c app -f\n  syncpodctl logs crashloop --previous\n  syncpodctl logs web --all-containers --prefix --tail 20",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("usage: logs POD [-c CONTAINER]")
			}
			if o.since != 0 && o.sinceTime != "" {
				return usagef("--since and --since-time exclude each other")
			}
			if o.all && (o.container != "" || len(args) == 2) {
				return usagef("--all-containers and a container name exclude each other")
			}
			return nil
		},
		ValidArgsFunction: g.completePodNames,
		RunE: onPodArg(func(cmd *cobra.Command, pod string, args []string) error {
			if len(args) == 2 {
				if o.container != "" && o.container != args[1] {
					return usagef("container named twice: %q and -c %q", args[1], o.container)
				}
				o.container = args[1]
			}
			return runLogs(cmd.Context(), g, pod, o)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container (default: the pod's first)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing lines as they are written, until the container stops or Ctrl-C")
	f.Int64Var(&o.tail, "tail", -1, "only the last N lines (-1: all)")
	f.DurationVar(&o.since, "since", 0, "only lines newer than this, e.g. 5s, 2m, 3h")
	f.StringVar(&o.sinceTime, "since-time", "", "only lines at or after this RFC 3339 time")
	f.BoolVar(&o.timestamps, "timestamps", false, "start each line with the time the runtime stamped on it")
	f.BoolVarP(&o.previous, "previous", "p", false, "the instance before the newest one (a crashed container's last run)")
	f.BoolVar(&o.all, "all-containers", false, "every container of the pod, init containers first")
	f.BoolVar(&o.prefix, "prefix", false, "start each line with [pod/NAME/CONTAINER]")
	return cmd
}

func runLogs(ctx context.Context, g *globals, pod string, o *logsOptions) error {
	req := &plannerv1.ContainerLogsRequest{Pod: podRef(g.namespace, pod), Follow: o.follow, Previous: o.previous}
	if o.tail >= 0 {
		req.TailLines = &o.tail
	}
	switch {
	case o.since > 0:
		req.SinceTime = timestamppb.New(g.env.Now().Add(-o.since))
	case o.sinceTime != "":
		t, err := time.Parse(time.RFC3339Nano, o.sinceTime)
		if err != nil {
			return usagef("--since-time: %v", err)
		}
		req.SinceTime = timestamppb.New(t)
	}
	containers := []string{o.container}
	if o.container == "" {
		rec, err := g.getPod(ctx, g.namespace, pod)
		if err != nil {
			return err
		}
		names := containerNames(rec)
		switch {
		case len(names) == 0:
			return notFound("pod %s has no containers", pod)
		case o.all:
			containers = names
		default:
			main := rec.GetPod().GetSpec().GetContainers()
			if len(main) == 0 {
				return notFound("pod %s has no containers", pod)
			}
			containers = []string{main[0].GetName()}
			if len(names) > 1 {
				fmt.Fprintf(g.env.Stderr, "Defaulted container %q out of: %s\n", containers[0], joinNames(names))
			}
		}
	}
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	out := &lineWriter{w: g.env.Stdout}
	print := func(ctx context.Context, container string) error {
		r := proto2logs(req, container)
		stream, err := client.ContainerLogs(ctx, r)
		if err != nil {
			return err
		}
		prefix := ""
		if o.prefix {
			prefix = fmt.Sprintf("[pod/%s/%s] ", pod, container)
		}
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			for _, l := range msg.GetLines() {
				ts := ""
				if o.timestamps && l.GetTime() != nil {
					ts = l.GetTime().AsTime().UTC().Format(time.RFC3339Nano) + " "
				}
				out.line(prefix+ts, l.GetContent(), !l.GetPartial())
			}
		}
	}
	if !o.follow || len(containers) == 1 {
		for _, c := range containers {
			if err := print(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
	eg, ectx := errgroup.WithContext(ctx)
	for _, c := range containers {
		eg.Go(func() error { return print(ectx, c) })
	}
	return eg.Wait()
}

// proto2logs is the request for one container.
func proto2logs(req *plannerv1.ContainerLogsRequest, container string) *plannerv1.ContainerLogsRequest {
	return &plannerv1.ContainerLogsRequest{Pod: req.GetPod(), Container: container, Follow: req.GetFollow(),
		TailLines: req.TailLines, SinceTime: req.GetSinceTime(), Previous: req.GetPrevious()}
}

// lineWriter writes whole lines from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(prefix string, content []byte, newline bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := make([]byte, 0, len(prefix)+len(content)+1)
	b = append(append(b, prefix...), content...)
	if newline {
		b = append(b, '\n')
	}
	_, _ = l.w.Write(b)
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// containerNames lists a pod's containers, init containers first and
// ephemeral ones last.
func containerNames(r *plannerv1.PodRecord) []string {
	var names []string
	s := r.GetPod().GetSpec()
	for _, c := range slices.Concat(s.GetInitContainers(), s.GetContainers(), s.GetEphemeralContainers()) {
		names = append(names, c.GetName())
	}
	return names
}
