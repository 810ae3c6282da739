package ctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func cmdApply(ctx context.Context, g *globals, args []string) error {
	fs := subFlags("apply", "syncpodctl apply -f FILE|DIR|- : create or update pods.\n\nFiles hold Kubernetes v1 Pod manifests (YAML or JSON) or syncpod Pod JSON;\nYAML files may hold several documents separated by ---.", g.env.Stderr)
	var files multiFlag
	fs.Var(&files, "f", "file, directory or - for standard input (repeatable)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("apply needs -f FILE, DIR or -")
	}
	pods, err := readPods(files, g.env.Stdin, g.env.ConvertKubernetes, g.env.Stderr)
	if err != nil {
		return err
	}
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	var firstErr error
	for _, p := range pods {
		rctx, cancel := context.WithTimeout(ctx, g.timeout)
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

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type sourcedPod struct {
	source string
	pod    *syncpodv1.Pod
}

// readPods reads every pod from files, directories (their *.yaml, *.yml
// and *.json files, sorted) and standard input ("-").
func readPods(paths []string, stdin io.Reader, convert KubernetesConverter, stderr io.Writer) ([]sourcedPod, error) {
	var out []sourcedPod
	var errs []error
	add := func(name string, data []byte) {
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
				return nil, err
			}
			add("<stdin>", data)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, usagef("%v", err)
		}
		files := []string{p}
		if fi.IsDir() {
			files = nil
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, err
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
				return nil, err
			}
			add(f, data)
		}
	}
	if len(errs) > 0 {
		return nil, usagef("%v", errors.Join(errs...))
	}
	if len(out) == 0 {
		return nil, usagef("no pods found in %s", strings.Join(paths, ", "))
	}
	return out, nil
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
		_ = yaml.Unmarshal(js, &head)
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

func cmdGet(ctx context.Context, g *globals, args []string) error {
	fs := subFlags("get", "syncpodctl get pods [NAME...] : list pods.", g.env.Stderr)
	ns := fs.String("n", "default", "namespace")
	all := fs.Bool("A", false, "all namespaces")
	selector := fs.String("l", "", "label selector, e.g. app=web,tier!=db")
	output := fs.String("o", "", "output: wide, json or yaml")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || (pos[0] != "pods" && pos[0] != "pod" && pos[0] != "po") {
		return usagef("get supports one resource: pods")
	}
	switch *output {
	case "", "wide", "json", "yaml":
	default:
		return usagef("-o %q: want wide, json or yaml", *output)
	}
	namespace := *ns
	if *all {
		namespace = ""
	}
	resp, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.ListPodsResponse, error) {
		return c.ListPods(ctx, &plannerv1.ListPodsRequest{Namespace: namespace, LabelSelector: *selector})
	})
	if err != nil {
		return err
	}
	records := resp.GetRecords()
	if names := pos[1:]; len(names) > 0 {
		records = slices.DeleteFunc(slices.Clone(records), func(r *plannerv1.PodRecord) bool {
			return !slices.Contains(names, r.GetPod().GetName())
		})
		if len(records) == 0 {
			return notFound("pods %q not found in namespace %q", strings.Join(names, ","), namespace)
		}
	}
	switch *output {
	case "json", "yaml":
		return printMessage(g.env.Stdout, &plannerv1.ListPodsResponse{Records: records}, *output)
	}
	if len(records) == 0 {
		where := fmt.Sprintf("in %s namespace", namespace)
		if namespace == "" {
			where = "in any namespace"
		}
		fmt.Fprintf(g.env.Stderr, "No pods found %s.\n", where)
		return nil
	}
	now := g.env.Now()
	header := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if *all {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if *output == "wide" {
		header = append(header, "IP", "UID")
	}
	rows := [][]string{header}
	for _, r := range records {
		row := []string{r.GetPod().GetName(), readyColumn(r), podStatusColumn(r), restartsColumn(r, now), ageColumn(r.GetPod(), now)}
		if *all {
			row = append([]string{namespaceOf(r.GetPod())}, row...)
		}
		if *output == "wide" {
			ip := r.GetStatus().GetPodIp()
			if ip == "" {
				ip = "<none>"
			}
			row = append(row, ip, r.GetPod().GetUid())
		}
		rows = append(rows, row)
	}
	fmt.Fprint(g.env.Stdout, table(rows))
	return nil
}

func namespaceOf(p *syncpodv1.Pod) string {
	if p.GetNamespace() == "" {
		return "default"
	}
	return p.GetNamespace()
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

// onPlanner makes one call to the planner, bounded by --timeout.
func onPlanner[T any](ctx context.Context, g *globals, call func(context.Context, plannerv1.PlannerServiceClient) (T, error)) (T, error) {
	client, closer, err := g.planner()
	if err != nil {
		var zero T
		return zero, err
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return call(ctx, client)
}

// onExecutor makes one call to the executor, bounded by --timeout.
func onExecutor[T any](ctx context.Context, g *globals, call func(context.Context, executorv1.ExecutorServiceClient) (T, error)) (T, error) {
	client, closer, err := g.executorClient()
	if err != nil {
		var zero T
		return zero, err
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
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

func cmdDescribe(ctx context.Context, g *globals, args []string) error {
	fs := subFlags("describe", "syncpodctl describe pod NAME : everything known about a pod.", g.env.Stderr)
	ns := fs.String("n", "default", "namespace")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || !isPods(pos[0]) {
		return usagef("usage: describe pod NAME")
	}
	rec, err := g.getPod(ctx, *ns, pos[1])
	if err != nil {
		return err
	}
	fmt.Fprint(g.env.Stdout, describe(rec, g.env.Now()))
	return nil
}

func cmdDelete(ctx context.Context, g *globals, args []string) error {
	fs := subFlags("delete", "syncpodctl delete pod NAME... : stop a pod and forget it once its containers are gone.", g.env.Stderr)
	ns := fs.String("n", "default", "namespace")
	grace := fs.Int64("grace-period", -1, "seconds to give containers before SIGKILL (default: the pod's)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || !isPods(pos[0]) {
		return usagef("usage: delete pod NAME...")
	}
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	var firstErr error
	for _, name := range pos[1:] {
		req := &plannerv1.DeletePodRequest{Pod: podRef(*ns, name)}
		if *grace >= 0 {
			req.GracePeriodSeconds = grace
		}
		rctx, cancel := context.WithTimeout(ctx, g.timeout)
		_, err := client.DeletePod(rctx, req)
		cancel()
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			report(g.env.Stderr, err)
			continue
		}
		fmt.Fprintf(g.env.Stdout, "pod \"%s\" deleted\n", name)
	}
	if firstErr != nil {
		return silent{firstErr}
	}
	return nil
}

func cmdPlan(ctx context.Context, g *globals, args []string) error {
	fs := subFlags("plan", "syncpodctl plan -f FILE : what the node would do for this pod, and why.\n\nWithout --observed the pod is planned as if nothing of it exists yet.", g.env.Stderr)
	file := fs.String("f", "", "pod manifest (Kubernetes or syncpod)")
	observed := fs.String("observed", "", "syncpod ObservedPod JSON/YAML: the runtime state to plan against")
	output := fs.String("o", "", "output: json or yaml (default: human)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return usagef("plan needs -f FILE")
	}
	pods, err := readPods([]string{*file}, g.env.Stdin, g.env.ConvertKubernetes, g.env.Stderr)
	if err != nil {
		return err
	}
	if len(pods) != 1 {
		return usagef("plan takes exactly one pod, %s holds %d", *file, len(pods))
	}
	req := &plannerv1.PlanRequest{Pod: pods[0].pod}
	if *observed != "" {
		data, err := os.ReadFile(*observed)
		if err != nil {
			return usagef("%v", err)
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return usagef("%s: %v", *observed, err)
		}
		req.Observed = &syncpodv1.ObservedPod{}
		if err := protojson.Unmarshal(js, req.Observed); err != nil {
			return usagef("%s: not an ObservedPod: %v", *observed, err)
		}
	}
	resp, err := onPlanner(ctx, g, func(ctx context.Context, c plannerv1.PlannerServiceClient) (*plannerv1.PlanResponse, error) {
		return c.Plan(ctx, req)
	})
	if err != nil {
		return err
	}
	if *output != "" {
		return printMessage(g.env.Stdout, resp, *output)
	}
	fmt.Fprint(g.env.Stdout, describeActions(resp.GetActions()))
	return nil
}

func cmdEvents(ctx context.Context, g *globals, args []string) error {
	fs := subFlags("events", "syncpodctl events [POD] : events of one pod or every pod in the namespace.", g.env.Stderr)
	ns := fs.String("n", "default", "namespace")
	all := fs.Bool("A", false, "all namespaces")
	watch := fs.Bool("watch", false, "keep printing new events until interrupted")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("usage: events [POD]")
	}
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	namespace := *ns
	if *all {
		namespace = ""
	}
	keep := func(r *plannerv1.PodRecord) bool {
		return len(pos) == 0 || r.GetPod().GetName() == pos[0]
	}
	seen := map[string]int32{}
	now := g.env.Now()
	w := g.env.Stdout
	fmt.Fprintln(w, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	print := func(r *plannerv1.PodRecord) {
		for _, e := range r.GetEvents() {
			key := fmt.Sprintf("%s/%s/%s/%s/%s/%d", r.GetPod().GetUid(), e.GetType(), e.GetReason(), e.GetInvolvedContainer(), e.GetMessage(), e.GetFirstTime().AsTime().UnixNano())
			if seen[key] == e.GetCount() {
				continue
			}
			seen[key] = e.GetCount()
			obj := "pod/" + r.GetPod().GetName()
			if c := e.GetInvolvedContainer(); c != "" {
				obj += "/" + c
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", humanDuration(now.Sub(e.GetLastTime().AsTime())), eventType(e.GetType()), e.GetReason(), obj, e.GetMessage())
		}
	}
	if !*watch {
		rctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		list, err := client.ListPods(rctx, &plannerv1.ListPodsRequest{Namespace: namespace})
		if err != nil {
			return err
		}
		for _, r := range list.GetRecords() {
			if !keep(r) {
				continue
			}
			got, err := client.GetPod(rctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Uid: r.GetPod().GetUid()}})
			if err != nil {
				return err
			}
			print(got.GetRecord())
		}
		return nil
	}
	stream, err := client.WatchPods(ctx, &plannerv1.WatchPodsRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now = g.env.Now()
		if ev.GetType() == plannerv1.WatchEventType_WATCH_EVENT_TYPE_RESYNC {
			fmt.Fprintln(g.env.Stderr, "(fell behind; some events may be missing)")
			continue
		}
		if keep(ev.GetRecord()) {
			print(ev.GetRecord())
		}
	}
}

func eventType(t syncpodv1.EventType) string {
	if t == syncpodv1.EventType_EVENT_TYPE_WARNING {
		return "Warning"
	}
	return "Normal"
}

func cmdBackoffs(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("usage: backoffs list [--pod UID] | backoffs reset POD_UID [CONTAINER]")
	}
	switch args[0] {
	case "list", "ls":
		fs := subFlags("backoffs list", "syncpodctl backoffs list : crash-loop back-offs held by the executor.", g.env.Stderr)
		pod := fs.String("pod", "", "only this pod uid")
		output := fs.String("o", "", "output: json or yaml")
		if _, err := parseInterleaved(fs, args[1:]); err != nil {
			return err
		}
		return listBackoffs(ctx, g, *pod, *output)
	case "reset":
		if len(args) < 2 || len(args) > 3 {
			return usagef("usage: backoffs reset POD_UID [CONTAINER]")
		}
		req := &executorv1.ResetBackoffRequest{PodUid: args[1]}
		if len(args) == 3 {
			req.ContainerName = args[2]
		}
		resp, err := onExecutor(ctx, g, func(ctx context.Context, c executorv1.ExecutorServiceClient) (*executorv1.ResetBackoffResponse, error) {
			return c.ResetBackoff(ctx, req)
		})
		if err != nil {
			return err
		}
		noun := "entries"
		if resp.GetRemoved() == 1 {
			noun = "entry"
		}
		fmt.Fprintf(g.env.Stdout, "%d back-off %s cleared\n", resp.GetRemoved(), noun)
		return nil
	}
	return usagef("unknown backoffs command %q (list, reset)", args[0])
}

func listBackoffs(ctx context.Context, g *globals, pod, output string) error {
	resp, err := onExecutor(ctx, g, func(ctx context.Context, c executorv1.ExecutorServiceClient) (*executorv1.ListBackoffsResponse, error) {
		return c.ListBackoffs(ctx, &executorv1.ListBackoffsRequest{PodUid: pod})
	})
	if err != nil {
		return err
	}
	if output != "" {
		return printMessage(g.env.Stdout, resp, output)
	}
	if len(resp.GetEntries()) == 0 {
		fmt.Fprintln(g.env.Stderr, "No back-offs.")
		return nil
	}
	now := g.env.Now()
	rows := [][]string{{"POD", "CONTAINER", "DELAY", "RETRY IN", "POD UID"}}
	for _, e := range resp.GetEntries() {
		retry := "-"
		if u := e.GetBackoffUntil(); u != nil && u.AsTime().After(now) {
			retry = humanDuration(u.AsTime().Sub(now))
		}
		rows = append(rows, []string{namespaceOrDefault(e.GetPodNamespace()) + "/" + e.GetPodName(), e.GetContainerName(), e.GetDelay().AsDuration().String(), retry, e.GetPodUid()})
	}
	fmt.Fprint(g.env.Stdout, table(rows))
	return nil
}

func namespaceOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func cmdLogs(ctx context.Context, g *globals, args []string) error {
	fs := subFlags("logs", "syncpodctl logs POD CONTAINER : print a container's log from the local log directory.", g.env.Stderr)
	ns := fs.String("n", "default", "namespace")
	previous := fs.Bool("previous", false, "the previous instance's log")
	defaultLogDir := g.env.Getenv("SYNCPOD_LOG_DIR")
	if defaultLogDir == "" {
		defaultLogDir = "/var/log/pods"
	}
	logDir := fs.String("log-dir", defaultLogDir, "the executor's pod log directory (SYNCPOD_LOG_DIR)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("usage: logs POD CONTAINER")
	}
	rec, err := g.getPod(ctx, *ns, pos[0])
	if err != nil {
		return err
	}
	p := rec.GetPod()
	dir := filepath.Join(*logDir, fmt.Sprintf("%s_%s_%s", namespaceOf(p), p.GetName(), p.GetUid()), pos[1])
	file, err := pickLog(dir, *previous)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	return copyCRILog(g.env.Stdout, f)
}

// pickLog returns the newest (or second newest) <restart>.log in dir.
func pickLog(dir string, previous bool) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", notFound("no logs at %s: %v", dir, err)
	}
	var counts []int
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log")); err == nil && strings.HasSuffix(e.Name(), ".log") {
			counts = append(counts, n)
		}
	}
	slices.Sort(counts)
	want := len(counts) - 1
	if previous {
		want--
	}
	if want < 0 {
		return "", notFound("no %slog in %s", map[bool]string{true: "previous ", false: ""}[previous], dir)
	}
	return filepath.Join(dir, strconv.Itoa(counts[want])+".log"), nil
}

// copyCRILog prints the messages of a CRI-format log
// ("<time> <stream> <P|F> <message>"), joining partial lines.
func copyCRILog(w io.Writer, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) < 3 {
			continue
		}
		msg := ""
		if len(parts) == 4 {
			msg = parts[3]
		}
		if parts[2] == "P" {
			fmt.Fprint(w, msg)
		} else {
			fmt.Fprintln(w, msg)
		}
	}
	return sc.Err()
}
