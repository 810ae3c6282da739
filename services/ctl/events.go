package ctl

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/syncpod/syncpod/proto/k8snames"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func newEvents(g *globals) *cobra.Command {
	var all, watch bool
	cmd := &cobra.Command{
		Use:   "events [POD]",
		Short: "Events of a pod or of every pod in the namespace",
		Long: "Events of one pod, or of every pod in the namespace (-A: every namespace),\n" +
			"oldest first, with how often each happened and when first and last.\n" +
			"A pod that does not exist exits 3.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("events takes at most one pod")
			}
			return nil
		},
		ValidArgsFunction: g.completePodNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			pod := ""
			if len(args) == 1 {
				var err error
				if pod, err = podArg(args[0]); err != nil {
					return err
				}
			}
			return runEvents(cmd.Context(), g, pod, all, watch)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "events of every namespace")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "keep printing new events until interrupted")
	return cmd
}

type podEvent struct {
	pod *syncpodv1.Pod
	ev  *syncpodv1.Event
}

func eventHeader(all bool) []string {
	h := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "FIRST SEEN", "MESSAGE"}
	if all {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

func eventRow(e podEvent, now time.Time, all bool) []string {
	obj := "pod/" + e.pod.GetName()
	if c := e.ev.GetInvolvedContainer(); c != "" {
		obj += "/" + c
	}
	count := max(e.ev.GetCount(), 1)
	row := []string{humanDuration(now.Sub(e.ev.GetLastTime().AsTime())), k8snames.EventType(e.ev.GetType()), e.ev.GetReason(), obj,
		strconv.Itoa(int(count)), humanDuration(now.Sub(e.ev.GetFirstTime().AsTime())), e.ev.GetMessage()}
	if all {
		row = append([]string{namespaceOf(e.pod)}, row...)
	}
	return row
}

func runEvents(ctx context.Context, g *globals, pod string, all, watch bool) error {
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	namespace := g.namespace
	if all {
		namespace = ""
	}
	if pod != "" {
		// An unknown pod is NotFound (exit 3), not an empty list.
		if _, err := g.getPod(ctx, g.namespace, pod); err != nil {
			return err
		}
	}
	keep := func(r *plannerv1.PodRecord) bool { return pod == "" || r.GetPod().GetName() == pod }
	if !watch {
		rctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
		defer cancel()
		list, err := client.ListPods(rctx, &plannerv1.ListPodsRequest{Namespace: namespace})
		if err != nil {
			return err
		}
		var evs []podEvent
		for _, r := range list.GetRecords() {
			if !keep(r) {
				continue
			}
			got, err := client.GetPod(rctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Uid: r.GetPod().GetUid()}})
			if err != nil {
				return err
			}
			for _, e := range got.GetRecord().GetEvents() {
				evs = append(evs, podEvent{got.GetRecord().GetPod(), e})
			}
		}
		if len(evs) == 0 {
			fmt.Fprintf(g.env.Stderr, "No events found in %s.\n", map[bool]string{true: "any namespace", false: namespace + " namespace"}[namespace == ""])
			return nil
		}
		slices.SortStableFunc(evs, func(a, b podEvent) int {
			return a.ev.GetLastTime().AsTime().Compare(b.ev.GetLastTime().AsTime())
		})
		now := g.env.Now()
		rows := [][]string{eventHeader(all)}
		for _, e := range evs {
			rows = append(rows, eventRow(e, now, all))
		}
		fmt.Fprint(g.env.Stdout, table(rows))
		return nil
	}
	stream, err := client.WatchPods(ctx, &plannerv1.WatchPodsRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	out := &streamTable{w: g.env.Stdout}
	out.header(eventHeader(all))
	seen := map[string]int32{}
	return watchPods(ctx, g, stream, "events", func(ev *plannerv1.WatchPodsResponse) error {
		r := ev.GetRecord()
		if !keep(r) {
			return nil
		}
		now := g.env.Now()
		for _, e := range r.GetEvents() {
			key := fmt.Sprintf("%s/%s/%s/%s/%s/%d", r.GetPod().GetUid(), e.GetType(), e.GetReason(), e.GetInvolvedContainer(), e.GetMessage(), e.GetFirstTime().AsTime().UnixNano())
			if seen[key] == e.GetCount() {
				continue
			}
			seen[key] = e.GetCount()
			out.row(eventRow(podEvent{r.GetPod(), e}, now, all))
		}
		return nil
	})
}
