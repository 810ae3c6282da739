package ctl

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func newPlan(g *globals) *cobra.Command {
	var file, observed, output string
	var empty bool
	cmd := &cobra.Command{
		Use:   "plan -f FILE",
		Short: "Dry run: what the node would do for this pod now, and why",
		Long: "Dry run of the kubelet's computePodActions: what the node would do if this pod\n" +
			"were applied now, each action with its reason. Nothing is stored or started.\n\n" +
			"When the pod exists, the plan is made against its live observed state (read\n" +
			"from the PLEG, --pleg); --empty plans against an empty node instead, and\n" +
			"--observed FILE against a given ObservedPod (JSON or YAML). Probe results are\n" +
			"not included: a failing liveness probe does not show up in the plan.",
		Example: "  syncpodctl plan -f examples/web.yaml\n  syncpodctl plan -f examples/web.yaml --empty",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("plan needs -f FILE")
			}
			if empty && observed != "" {
				return usagef("--empty and --observed exclude each other")
			}
			if output != "" && output != "json" && output != "yaml" {
				return usagef("-o %q: want json or yaml", output)
			}
			return runPlan(cmd.Context(), g, file, observed, output, empty)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "pod manifest (Kubernetes or syncpod)")
	f.StringVar(&observed, "observed", "", "syncpod ObservedPod JSON/YAML: the runtime state to plan against")
	f.BoolVar(&empty, "empty", false, "plan against an empty node, as for a pod that does not exist yet")
	f.StringVarP(&output, "output", "o", "", "output: json or yaml (default: human)")
	return cmd
}

func runPlan(ctx context.Context, g *globals, file, observed, output string, empty bool) error {
	pods, err := readPods([]string{file}, g.env.Stdin, g.env.ConvertKubernetes, g.env.Stderr)
	if err != nil {
		return err
	}
	if len(pods) != 1 {
		return usagef("plan takes exactly one pod, %s holds %d", file, len(pods))
	}
	req := &plannerv1.PlanRequest{Pod: pods[0].pod}
	switch {
	case observed != "":
		data, err := os.ReadFile(observed)
		if err != nil {
			return usagef("%v", err)
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return usagef("%s: %v", observed, err)
		}
		req.Observed = &syncpodv1.ObservedPod{}
		if err := protojson.Unmarshal(js, req.Observed); err != nil {
			return usagef("%s: not an ObservedPod: %v", observed, err)
		}
	case !empty:
		live, err := liveObserved(ctx, g, req.Pod)
		if err != nil {
			return err
		}
		req.Observed = live
	}
	resp, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.PlanResponse, error) {
		return c.Plan(ctx, req)
	})
	if err != nil {
		return err
	}
	if output != "" {
		return printMessage(g.env.Stdout, resp, output)
	}
	fmt.Fprint(g.env.Stdout, describeActions(resp.GetActions()))
	return nil
}

// liveObserved returns the observed state of the stored pod with p's
// namespace and name, or nil (an empty node) when there is none. It
// gives p the stored pod's uid.
func liveObserved(ctx context.Context, g *globals, p *syncpodv1.Pod) (*syncpodv1.ObservedPod, error) {
	ns := p.GetNamespace()
	if ns == "" {
		ns = g.namespace
	}
	rec, err := g.getPod(ctx, ns, p.GetName())
	if status.Code(err) == codes.NotFound {
		fmt.Fprintf(g.env.Stderr, "pod/%s does not exist in namespace %q: planning against an empty node.\n", p.GetName(), ns)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	uid := rec.GetPod().GetUid()
	if p.GetUid() != "" && p.GetUid() != uid {
		return nil, usagef("pod/%s: the file's uid %s is not the live pod's %s", p.GetName(), p.GetUid(), uid)
	}
	p.Uid = uid
	resp, err := func() (*plegv1.GetPodStatusResponse, error) {
		client, closer, err := g.plegClient()
		if err != nil {
			return nil, err
		}
		defer closer.Close()
		rctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
		defer cancel()
		return client.GetPodStatus(rctx, &plegv1.GetPodStatusRequest{PodUid: uid})
	}()
	if err != nil {
		return nil, fmt.Errorf("reading pod/%s's observed state from the PLEG at %s (use --empty to plan without it): %w", p.GetName(), g.pleg, err)
	}
	o := resp.GetObserved()
	when := "unknown time"
	if o.GetObservedAt() != nil {
		when = o.GetObservedAt().AsTime().Format("15:04:05")
	}
	fmt.Fprintf(g.env.Stderr, "Planning against pod/%s as observed at %s: %d sandbox(es), %d container(s).\n", p.GetName(), when, len(o.GetSandboxes()), len(o.GetContainers()))
	return o, nil
}
