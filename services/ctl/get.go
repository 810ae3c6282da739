package ctl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

type getOptions struct {
	all      bool
	selector string
	output   string
	watch    bool
}

func newGet(g *globals) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get pods|configmaps|secrets [NAME...] | get pod/NAME",
		Short: "List pods: NAME READY STATUS RESTARTS AGE",
		Long: "List pods, or print them as Kubernetes v1 Pods (-o yaml|json), names or a JSONPath.\n\n" +
			"`get pod NAME -o yaml` prints a v1 Pod that `apply -f` takes back unchanged.\n" +
			"With -w, keep printing pods as they change until interrupted.",
		Example: "  syncpodctl get pods -A -o wide\n  syncpodctl get pod web -o yaml\n  syncpodctl get pods -o jsonpath='{.items[*].status.podIP}'\n  syncpodctl get pods -w",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("get needs a resource: pods")
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"pods"}, cobra.ShellCompDirectiveNoFileComp
			}
			return g.completePods(args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if kind, names, ok := configArgs(args); ok {
				return runGetConfig(cmd.Context(), g, kind, names, o.all)
			}
			names, err := getNames(args)
			if err != nil {
				return err
			}
			out, err := parseOutput(o.output)
			if err != nil {
				return err
			}
			if o.watch {
				return runGetWatch(cmd.Context(), g, o, out, names)
			}
			return runGet(cmd.Context(), g, o, out, names)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.all, "all-namespaces", "A", false, "list pods of every namespace")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db")
	f.StringVarP(&o.output, "output", "o", "", outputHelp)
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, keep printing changes")
	return cmd
}

// getNames reads "pods [NAME...]" or "pod/NAME...".
func getNames(args []string) ([]string, error) {
	if isPods(args[0]) {
		return args[1:], nil
	}
	if strings.Contains(args[0], "/") {
		return podNames(args)
	}
	return nil, usagef("get supports one resource: pods (got %q)", args[0])
}

func (o *getOptions) namespace(g *globals) string {
	if o.all {
		return ""
	}
	return g.namespace
}

func runGet(ctx context.Context, g *globals, o *getOptions, out outputFormat, names []string) error {
	namespace := o.namespace(g)
	resp, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.ListPodsResponse, error) {
		return c.ListPods(ctx, &plannerv1.ListPodsRequest{Namespace: namespace, LabelSelector: o.selector})
	})
	if err != nil {
		return err
	}
	records := resp.GetRecords()
	if len(names) > 0 {
		var missing []string
		var kept []*plannerv1.PodRecord
		for _, n := range names {
			i := slices.IndexFunc(records, func(r *plannerv1.PodRecord) bool { return r.GetPod().GetName() == n })
			if i < 0 {
				missing = append(missing, n)
				continue
			}
			kept = append(kept, records[i])
		}
		records = kept
		if len(missing) > 0 {
			for _, n := range missing {
				fmt.Fprintf(g.env.Stderr, "Error from server (NotFound): pods %q not found\n", n)
			}
			if len(records) > 0 {
				if err := printRecords(g, o, out, records, false); err != nil {
					return err
				}
			}
			return exitError{exitNotFound}
		}
	}
	if len(records) == 0 && !out.structured() {
		where := fmt.Sprintf("in %s namespace", namespace)
		if namespace == "" {
			where = "in any namespace"
		}
		fmt.Fprintf(g.env.Stderr, "No resources found %s.\n", where)
		return nil
	}
	return printRecords(g, o, out, records, len(names) == 1)
}

func printRecords(g *globals, o *getOptions, out outputFormat, records []*plannerv1.PodRecord, single bool) error {
	if out.structured() {
		return out.printRecords(g.env.Stdout, records, single)
	}
	now := g.env.Now()
	rows := [][]string{podHeader(o.all, out.kind == "wide")}
	for _, r := range records {
		rows = append(rows, podRow(r, now, o.all, out.kind == "wide"))
	}
	fmt.Fprint(g.env.Stdout, table(rows))
	return nil
}

func podHeader(all, wide bool) []string {
	header := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if all {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if wide {
		header = append(header, "IP", "UID")
	}
	return header
}

func podRow(r *plannerv1.PodRecord, now time.Time, all, wide bool) []string {
	row := []string{r.GetPod().GetName(), readyColumn(r), podStatusColumn(r), restartsColumn(r, now), ageColumn(r.GetPod(), now)}
	if all {
		row = append([]string{namespaceOf(r.GetPod())}, row...)
	}
	if wide {
		ip := r.GetStatus().GetPodIp()
		if ip == "" {
			ip = "<none>"
		}
		row = append(row, ip, r.GetPod().GetUid())
	}
	return row
}

// runGetWatch prints the pods, then every change, until ctx ends: the
// planner's WatchPods sends one ADDED per existing pod first.
func runGetWatch(ctx context.Context, g *globals, o *getOptions, out outputFormat, names []string) error {
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	stream, err := client.WatchPods(ctx, &plannerv1.WatchPodsRequest{Namespace: o.namespace(g), LabelSelector: o.selector})
	if err != nil {
		return err
	}
	rows := &streamTable{w: g.env.Stdout}
	if !out.structured() {
		rows.header(podHeader(o.all, out.kind == "wide"))
	}
	return watchPods(ctx, g, stream, "changes", func(ev *plannerv1.WatchPodsResponse) error {
		r := ev.GetRecord()
		if len(names) > 0 && !slices.Contains(names, r.GetPod().GetName()) {
			return nil
		}
		if out.structured() {
			if err := out.printRecords(g.env.Stdout, []*plannerv1.PodRecord{r}, true); err != nil {
				return err
			}
			if out.kind == "json" || out.kind == "yaml" {
				fmt.Fprintln(g.env.Stdout, map[string]string{"json": "", "yaml": "---"}[out.kind])
			}
			return nil
		}
		row := podRow(r, g.env.Now(), o.all, out.kind == "wide")
		if ev.GetType() == plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED {
			row[slices.Index(podHeader(o.all, false), "STATUS")] = "Deleted"
		}
		rows.row(row)
		return nil
	})
}

// watchPods hands each change a WatchPods stream sends to each until the
// stream or each fails, or ctx ends (then it returns nil). A RESYNC, the
// planner saying this watcher fell behind, is said on stderr instead
// ("some <missing> may be missing").
func watchPods(ctx context.Context, g *globals, stream grpc.ServerStreamingClient[plannerv1.WatchPodsResponse], missing string, each func(*plannerv1.WatchPodsResponse) error) error {
	for {
		ev, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if ev.GetType() == plannerv1.WatchEventType_WATCH_EVENT_TYPE_RESYNC {
			fmt.Fprintf(g.env.Stderr, "(fell behind; some %s may be missing)\n", missing)
			continue
		}
		if err := each(ev); err != nil {
			return err
		}
	}
}

// streamTable prints rows one at a time, aligned to the widest cell seen
// so far (a table that is never complete, as kubectl's -w).
type streamTable struct {
	w      io.Writer
	widths []int
}

func (t *streamTable) header(cells []string) { t.row(cells) }

func (t *streamTable) row(cells []string) {
	for len(t.widths) < len(cells) {
		t.widths = append(t.widths, 0)
	}
	var b strings.Builder
	for i, c := range cells {
		t.widths[i] = max(t.widths[i], len(c))
		if i == len(cells)-1 {
			b.WriteString(c)
		} else {
			b.WriteString(c + strings.Repeat(" ", t.widths[i]-len(c)+3))
		}
	}
	b.WriteString("\n")
	fmt.Fprint(t.w, b.String())
}

// completePodNames is a ValidArgsFunction that offers the namespace's pods.
func (g *globals) completePodNames(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	return g.completePods(args)
}

// completePods offers the names of the namespace's pods.
func (g *globals) completePods(already []string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.ListPodsResponse, error) {
		return c.ListPods(ctx, &plannerv1.ListPodsRequest{Namespace: g.namespace})
	})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, r := range resp.GetRecords() {
		if !slices.Contains(already, r.GetPod().GetName()) {
			names = append(names, r.GetPod().GetName())
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
