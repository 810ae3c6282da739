package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func newApply(g *globals) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update pods from Kubernetes Pod YAML/JSON or syncpod JSON",
		Long: "Create or update pods.\n\nFiles hold Kubernetes v1 Pod manifests (YAML or JSON) or syncpod Pod JSON;\n" +
			"YAML files may hold several documents separated by ---. A directory means its\n*.yaml, *.yml and *.json files.",
		Example: "  syncpodctl apply -f examples/\n  syncpodctl get pod web -o yaml | syncpodctl apply -f -",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usagef("apply needs -f FILE, DIR or -")
			}
			return runApply(cmd.Context(), g, files)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory or - for standard input (repeatable)")
	return cmd
}

// noArgs refuses positional arguments as a usage error.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

func runApply(ctx context.Context, g *globals, files []string) error {
	// The connection is begun now, in the background, so its handshake
	// overlaps decoding the files; their errors still come before the
	// dial's.
	client, closer, dialErr := g.plannerEarly()
	if dialErr == nil {
		defer closer.Close()
	}
	pods, configs, err := readObjects(files, g.env.Stdin, g.env.ConvertKubernetes, g.env.Stderr)
	if err != nil {
		return err
	}
	if dialErr != nil {
		return dialErr
	}
	// Config objects first, so the pods that read them find them.
	firstErr := applyConfigs(ctx, g, client, configs)
	for _, p := range pods {
		if p.pod.GetNamespace() == "" && g.namespace != validation.DefaultNamespace {
			p.pod.Namespace = g.namespace
		}
		rctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
		resp, err := client.ApplyPod(rctx, &plannerv1.ApplyPodRequest{Pod: p.pod})
		cancel()
		if err != nil {
			fmt.Fprintf(g.env.Stderr, "%s: pod/%s: ", p.source, p.pod.GetName())
			report(g.env.Stderr, err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		verb := map[plannerv1.ApplyResult]string{
			plannerv1.ApplyResult_APPLY_RESULT_CREATED:   "created",
			plannerv1.ApplyResult_APPLY_RESULT_UPDATED:   "configured",
			plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED: "unchanged",
		}[resp.GetResult()]
		fmt.Fprintf(g.env.Stdout, "pod/%s %s\n", resp.GetPod().GetName(), verb)
	}
	if firstErr != nil {
		return silent{firstErr}
	}
	return nil
}

// silent is an error already reported to the user.
type silent struct{ err error }

func (s silent) Error() string { return s.err.Error() }

func cmpErr(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

type sourcedPod struct {
	source string
	pod    *syncpodv1.Pod
}

// readPods reads every pod from files, directories (their *.yaml, *.yml
// and *.json files, sorted) and standard input ("-").
func readPods(paths []string, stdin io.Reader, convert KubernetesConverter, stderr io.Writer) ([]sourcedPod, error) {
	pods, _, err := readObjects(paths, stdin, convert, stderr)
	if err == nil && len(pods) == 0 {
		return nil, usagef("no pods found in %s", strings.Join(paths, ", "))
	}
	return pods, err
}

// readObjects reads every pod, ConfigMap and Secret from files,
// directories and standard input, as readPods.
func readObjects(paths []string, stdin io.Reader, convert KubernetesConverter, stderr io.Writer) ([]sourcedPod, []sourcedConfig, error) {
	var out []sourcedPod
	var configs []sourcedConfig
	var errs []error
	add := func(name string, data []byte) {
		data, cfgs, err := splitConfigObjects(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return
		}
		for _, c := range cfgs {
			configs = append(configs, sourcedConfig{source: name, obj: c})
		}
		if len(cfgs) > 0 && len(strings.TrimSpace(string(data))) == 0 {
			return
		}
		pods, err := DecodePods(data, convert, func(w string) { fmt.Fprintf(stderr, "Warning: %s: %s\n", name, w) })
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return
		}
		for _, p := range pods {
			out = append(out, sourcedPod{name, p})
		}
	}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, nil, err
			}
			add("<stdin>", data)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, usagef("%v", err)
		}
		files := []string{p}
		if fi.IsDir() {
			files = nil
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, nil, err
			}
			for _, e := range entries {
				switch filepath.Ext(e.Name()) {
				case ".yaml", ".yml", ".json":
					if !e.IsDir() {
						files = append(files, filepath.Join(p, e.Name()))
					}
				}
			}
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, nil, err
			}
			add(f, data)
		}
	}
	if len(errs) > 0 {
		return nil, nil, usagef("%v", errors.Join(errs...))
	}
	if len(out)+len(configs) == 0 {
		return nil, nil, usagef("no pods found in %s", strings.Join(paths, ", "))
	}
	return out, configs, nil
}

// KubernetesConverter turns a Kubernetes v1 Pod manifest (JSON) into a
// syncpod Pod, with warnings about fields it ignored. The planner's
// manifest package provides it; without it Kubernetes manifests are
// refused.
type KubernetesConverter func(json []byte) (*syncpodv1.Pod, []string, error)

// DecodePods decodes one file's worth of pods: YAML or JSON, one or more
// documents, each either a syncpod Pod (protojson field names) or a
// Kubernetes v1 Pod (apiVersion v1, kind Pod).
func DecodePods(data []byte, convert KubernetesConverter, warn func(string)) ([]*syncpodv1.Pod, error) {
	var pods []*syncpodv1.Pod
	for i, doc := range splitYAML(data) {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if strings.TrimSpace(string(js)) == "null" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		_ = json.Unmarshal(js, &head) // js is JSON: no second YAML pass
		if head.Kind != "" || head.APIVersion != "" {
			if head.Kind != "Pod" || head.APIVersion != "v1" {
				return nil, fmt.Errorf("document %d: kind %q apiVersion %q: only v1 Pods are supported", i+1, head.Kind, head.APIVersion)
			}
			if convert == nil {
				return nil, fmt.Errorf("document %d: this build cannot convert Kubernetes Pod manifests; use syncpod JSON", i+1)
			}
			p, warnings, err := convert(js)
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
			for _, w := range warnings {
				warn(fmt.Sprintf("pod/%s: %s", p.GetName(), w))
			}
			pods = append(pods, p)
			continue
		}
		p := &syncpodv1.Pod{}
		if err := protojson.Unmarshal(js, p); err != nil {
			return nil, fmt.Errorf("document %d: not a syncpod Pod: %w", i+1, err)
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// splitYAML splits a YAML stream at document separators.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimRight(line, " \t") == "---" {
			docs = append(docs, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	docs = append(docs, []byte(strings.Join(cur, "\n")))
	out := docs[:0]
	for _, d := range docs {
		if strings.TrimSpace(string(d)) != "" {
			out = append(out, d)
		}
	}
	return out
}

func namespaceOf(p *syncpodv1.Pod) string {
	return validation.NamespaceOrDefault(p.GetNamespace())
}

// notFound is a NotFound error found on this side.
type notFoundError struct{ msg string }

func (e notFoundError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return notFoundError{fmt.Sprintf(format, args...)}
}

func printMessage(w io.Writer, m proto.Message, format string) error {
	js, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return err
	}
	if format == "yaml" {
		y, err := yaml.JSONToYAML(js)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	_, err = fmt.Fprintln(w, string(js))
	return err
}

func podRef(ns, name string) *plannerv1.PodRef {
	return &plannerv1.PodRef{Namespace: ns, Name: name}
}

// onPlanner makes one call to the planner, bounded by --request-timeout.
func onPlanner[T any](ctx context.Context, g *globals, call func(context.Context, plannerv1.PlannerServiceClient) (T, error)) (T, error) {
	return onService(ctx, g, g.planner, call)
}

// onExecutor makes one call to the executor, bounded by --request-timeout.
func onExecutor[T any](ctx context.Context, g *globals, call func(context.Context, executorv1.ExecutorServiceClient) (T, error)) (T, error) {
	return onService(ctx, g, g.executorClient, call)
}

// onService makes one call on a client dial makes, bounded by
// --request-timeout.
func onService[C, T any](ctx context.Context, g *globals, dial func() (C, io.Closer, error), call func(context.Context, C) (T, error)) (T, error) {
	client, closer, err := dial()
	if err != nil {
		var zero T
		return zero, err
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
	defer cancel()
	return call(ctx, client)
}

// getPod reads one pod's record from the planner.
func (g *globals) getPod(ctx context.Context, ns, name string) (*plannerv1.PodRecord, error) {
	resp, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.GetPodResponse, error) {
		return c.GetPod(ctx, &plannerv1.GetPodRequest{Pod: podRef(ns, name)})
	})
	if err != nil {
		return nil, err
	}
	return resp.GetRecord(), nil
}

// isPods reports whether a resource name means pods, as kubectl spells it.
func isPods(resource string) bool {
	return resource == "pod" || resource == "pods" || resource == "po"
}

func namespaceOrDefault(ns string) string {
	return validation.NamespaceOrDefault(ns)
}
