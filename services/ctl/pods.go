package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/proto/k8snames"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
	"github.com/syncpod/syncpod/services/ctl/cliargs"
)

func newDescribe(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe pod NAME",
		Short: "Spec, status, conditions and events of a pod",
		Args: func(_ *cobra.Command, args []string) error {
			names, err := podNames(args)
			if err == nil && len(names) != 1 {
				err = usagef("describe takes one pod")
			}
			return err
		},
		ValidArgsFunction: g.completePodArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			names, _ := podNames(args)
			rec, err := g.getPod(cmd.Context(), g.namespace, names[0])
			if err != nil {
				return err
			}
			fmt.Fprint(g.env.Stdout, describe(rec, g.env.Now()))
			return nil
		},
	}
}

// completePodArgs completes "pod NAME" arguments.
func (g *globals) completePodArgs(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		names, d := g.completePods(nil)
		return append([]string{"pod"}, names...), d
	}
	return g.completePods(args)
}

func newDelete(g *globals) *cobra.Command {
	var (
		grace   int64
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "delete pod NAME... | delete pod/NAME... | delete configmap|secret NAME...",
		Short: "Stop pods and forget them once their containers are gone; delete ConfigMaps and Secrets",
		Long: "Stop pods and forget them once their containers are gone.\n\n" +
			"Like kubectl, delete waits until each pod is gone (--wait=false returns at once).\n" +
			"ConfigMaps and Secrets are deleted at once; pods that mount them keep their files.",
		Args: func(_ *cobra.Command, args []string) error {
			if _, _, ok := configArgs(args); ok {
				return nil
			}
			_, err := podNames(args)
			return err
		},
		ValidArgsFunction: g.completePodArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if kind, names, ok := configArgs(args); ok {
				return runDeleteConfig(cmd.Context(), g, kind, names)
			}
			names, _ := podNames(args)
			return runDelete(cmd.Context(), g, names, grace, wait, timeout)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&grace, "grace-period", -1, "seconds to give containers before SIGKILL (default: the pod's)")
	f.BoolVar(&wait, "wait", true, "wait until the pods are gone")
	f.DurationVar(&timeout, "timeout", 0, "how long to wait for the pods to be gone (0: the grace period plus a minute)")
	return cmd
}

func runDelete(ctx context.Context, g *globals, names []string, grace int64, wait bool, timeout time.Duration) error {
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	var firstErr error
	var deleted []string
	longestGrace := validation.DefaultGracePeriodSeconds
	for _, name := range names {
		req := &plannerv1.DeletePodRequest{Pod: podRef(g.namespace, name)}
		if grace >= 0 {
			req.GracePeriodSeconds = &grace
		}
		rctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
		resp, err := client.DeletePod(rctx, req)
		cancel()
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			report(g.env.Stderr, err)
			continue
		}
		if s := resp.GetPod().DeletionGracePeriodSeconds; s != nil {
			longestGrace = max(longestGrace, *s)
		}
		deleted = append(deleted, name)
		fmt.Fprintf(g.env.Stdout, "pod \"%s\" deleted\n", name)
	}
	if wait && len(deleted) > 0 {
		if timeout <= 0 {
			timeout = time.Duration(longestGrace)*time.Second + time.Minute
		}
		err := waitFor(ctx, g, deleted, timeout, func(_ string, r *plannerv1.PodRecord) (bool, error) { return r == nil, nil })
		if err != nil {
			return err
		}
	}
	if firstErr != nil {
		return silent{firstErr}
	}
	return nil
}

func newWait(g *globals) *cobra.Command {
	var (
		forCond string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait --for=condition=Ready|delete pod NAME... [--timeout 30s]",
		Short: "Wait until pods meet a condition or are gone",
		Long: "Wait until every pod named meets a condition (--for=condition=Ready, or\n" +
			"condition=NAME=False) or is gone (--for=delete). A pod that does not exist\n" +
			"is an error for a condition (exit 3) and met for delete. Timing out exits 1.",
		Example:           "  syncpodctl wait --for=condition=Ready pod/web --timeout=60s\n  syncpodctl wait --for=delete pod web",
		Args:              func(_ *cobra.Command, args []string) error { _, err := podNames(args); return err },
		ValidArgsFunction: g.completePodArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			names, _ := podNames(args)
			cond, err := parseWaitFor(forCond)
			if err != nil {
				return err
			}
			return waitFor(cmd.Context(), g, names, timeout, func(name string, r *plannerv1.PodRecord) (bool, error) {
				met, err := cond(r)
				if met {
					if forCond == "delete" {
						fmt.Fprintf(g.env.Stdout, "pod/%s deleted\n", name)
					} else {
						fmt.Fprintf(g.env.Stdout, "pod/%s condition met\n", name)
					}
				}
				return met, err
			})
		},
	}
	cmd.Flags().StringVar(&forCond, "for", "", "condition=NAME[=VALUE] or delete")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait; 0 checks once")
	return cmd
}

// parseWaitFor reads a --for value into a test of a pod record (nil when
// the pod is gone).
func parseWaitFor(v string) (func(*plannerv1.PodRecord) (bool, error), error) {
	w, err := cliargs.ParseWaitFor(v)
	if err != nil {
		return nil, err
	}
	if w.Delete {
		return func(r *plannerv1.PodRecord) (bool, error) { return r == nil, nil }, nil
	}
	name, want := w.Condition, w.Status
	return func(r *plannerv1.PodRecord) (bool, error) {
		if r == nil {
			return false, notFound("pods %q not found", "")
		}
		for _, c := range r.GetStatus().GetConditions() {
			if strings.EqualFold(c.GetType(), name) {
				return strings.EqualFold(k8snames.ConditionStatus(c.GetStatus()), want), nil
			}
		}
		return false, nil
	}, nil
}

// waitFor watches the pods named until done says each is done (it is
// called with nil once a pod is gone), an error, or timeout.
func waitFor(ctx context.Context, g *globals, names []string, timeout time.Duration, done func(name string, r *plannerv1.PodRecord) (bool, error)) error {
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
	// Watch first, then read each pod: a pod removed after the watch
	// began shows up as DELETED, one removed before is NotFound.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	pending := map[string]bool{}
	for _, name := range names {
		pending[name] = true
	}
	var stream plannerv1.PlannerService_WatchPodsClient
	if timeout > 0 {
		stream, err = client.WatchPods(wctx, &plannerv1.WatchPodsRequest{Namespace: g.namespace})
		if err == nil {
			// The planner sends the header once it has subscribed; the
			// call above returns before that. Reading the pods earlier
			// could miss one removed before the subscription began.
			_, err = stream.Header()
		}
		if err != nil {
			if ctx.Err() != nil {
				return timedOut(g, pending)
			}
			return err
		}
	}
	check := func(name string, r *plannerv1.PodRecord) error {
		ok, err := done(name, r)
		if err != nil {
			var nf notFoundError
			if errors.As(err, &nf) {
				return notFound("pods %q not found", name)
			}
			return err
		}
		if ok {
			delete(pending, name)
		}
		return nil
	}
	for _, name := range names {
		rctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
		resp, err := client.GetPod(rctx, &plannerv1.GetPodRequest{Pod: podRef(g.namespace, name)})
		cancel()
		switch {
		case err != nil && endedByDeadline(ctx, err):
			return timedOut(g, pending)
		case status.Code(err) == codes.NotFound:
			err = check(name, nil)
		case err == nil:
			err = check(name, resp.GetRecord())
		}
		if err != nil {
			return err
		}
	}
	for len(pending) > 0 {
		if stream == nil {
			return timedOut(g, pending)
		}
		ev, err := stream.Recv()
		if err != nil {
			if endedByDeadline(ctx, err) {
				return timedOut(g, pending)
			}
			return err
		}
		r := ev.GetRecord()
		name := r.GetPod().GetName()
		if !pending[name] {
			continue
		}
		switch ev.GetType() {
		case plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED:
			r = nil
		case plannerv1.WatchEventType_WATCH_EVENT_TYPE_RESYNC:
			continue
		}
		if err := check(name, r); err != nil {
			return err
		}
	}
	return nil
}

// endedByDeadline reports whether a call failed because the wait's own
// deadline passed. The server learns that deadline from the request and
// may end the stream (EOF, or DeadlineExceeded) a moment before the
// client's timer fires: such an end within a second of the deadline waits
// that moment out.
func endedByDeadline(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if !errors.Is(err, io.EOF) && status.Code(err) != codes.DeadlineExceeded {
		return false
	}
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > time.Second {
		return false
	}
	<-ctx.Done()
	return true
}

func timedOut(g *globals, pending map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		fmt.Fprintf(g.env.Stderr, "error: timed out waiting for the condition on pods/%s\n", name)
	}
	return exitError{exitFailure}
}
