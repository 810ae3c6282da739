// Command syncpod-bench measures a node agent on a real CRI runtime (see
// package bench) and prints the results side by side. bench/scripts/bench.sh
// runs it for `make bench` (syncpod and the raw CRI floor) and `make
// bench-kubelet` (the kubelet standalone, then syncpod, on identical private
// containerds).
//
//	syncpod-bench measure --agent syncpod|kubelet|cri --cri-endpoint unix:///... --out r.json [flags]
//	syncpod-bench table r1.json r2.json ...   the Markdown table, ratios of the second to the first
//	syncpod-bench report --out docs/benchmarks.md --section 'TITLE=r1.json,r2.json' ... [--command C] [--component NAME=VERSION]...
//	                                           the generated benchmark document and its plots (package report)
//	syncpod-bench pki DIR                      a loopback control plane's CA, serving certificate and service-account key
//	syncpod-bench versus --kubelet-cri-endpoint ... --syncpod-cri-endpoint ... --planner ... [flags]
//	                                          the kubelet and syncpod side by side, alternating (bench.Versus)
//	syncpod-bench measure-apiserver --server https://127.0.0.1:P --ca DIR/ca.crt --token T --node N --label L --out r.json
//	                                           pod created through the API server, bound to node N → Running (a watch)
//	syncpod-bench registry [--listen 127.0.0.1:5000] ARCHIVE...
//	                                           OCI image-layout archives served read-only over plain HTTP (package imageregistry)
//	syncpod-bench scale-nodes --server ... --ca ... --token T --nodes FILE --side S --audit-log LOG --out r.json
//	                                           many nodes of one side (kubemark or syncpod) under one control plane,
//	                                           loaded with pods bound round-robin (bench.NodeScale)
//	syncpod-bench scale-table r1.json r2.json  their Markdown tables (ratios of the second to the first)
//	syncpod-bench report-scale --doc docs/benchmarks.md r1.json r2.json
//	                                           their section put into the document, the rest of it left as it is
//	syncpod-bench measure-density --server ... --ca ... --token T --kubelet-node N --syncpod-node M --out d.json [flags]
//	                                           the density rows on two nodes of one API server, alternating (APIServer.Density)
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/syncpod/syncpod/bench"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/services/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: syncpod-bench measure [flags] | versus [flags] | measure-apiserver [flags] | measure-density [flags] | pki DIR [NODE NODE-IP] | conformance [flags] | registry [flags] ARCHIVE... | scale-nodes [flags] | scale-table FILE... | report-scale [flags] FILE... | table FILE... | report [flags]")
		return 2
	}
	switch args[0] {
	case "table":
		reports, err := readReports(args[1:])
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprint(stdout, bench.Table(reports))
		return 0
	case "report":
		return writeDocument(args[1:], time.Now(), stderr)
	case "conformance":
		return conformanceReport(args[1:], stderr)
	case "measure":
		return measure(ctx, args[1:], stderr)
	case "versus":
		return versus(ctx, args[1:], stderr)
	case "measure-apiserver":
		return measureAPIServer(ctx, args[1:], stderr)
	case "registry":
		return serveRegistry(ctx, args[1:], stderr)
	case "scale-nodes":
		return scaleNodes(ctx, args[1:], stderr)
	case "report-scale":
		return reportScale(args[1:], time.Now(), stderr)
	case "scale-table":
		return scaleTable(args[1:], stdout, stderr)
	case "measure-density":
		return measureDensity(ctx, args[1:], stderr)
	case "pki":
		var node *bench.NodePKI
		switch {
		case len(args) == 2:
		case len(args) == 4 && net.ParseIP(args[3]) != nil:
			node = &bench.NodePKI{Name: args[2], IP: net.ParseIP(args[3])}
		default:
			fmt.Fprintln(stderr, "usage: syncpod-bench pki DIR [NODE NODE-IP]")
			return 2
		}
		if err := bench.WriteClusterPKI(args[1], time.Now(), node); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "unknown command %q\n", args[0])
	return 2
}

func measure(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agent := fs.String("agent", "syncpod", "syncpod, kubelet or cri")
	endpoint := fs.String("cri-endpoint", "", "the runtime's CRI endpoint (unix:///...)")
	image := fs.String("image", "localhost/syncpod/busybox:1.36", "container image (present in the runtime)")
	manifestDir := fs.String("manifest-dir", "", "the agent's manifest directory (syncpod --manifest-dir, kubelet staticPodPath)")
	planner := fs.String("planner", "", "syncpod planner address (unix:///path)")
	ctl := fs.String("syncpodctl", "", "syncpodctl binary: with it, syncpod's single starts are also measured through `syncpodctl --server PLANNER apply -f` (one process a pod)")
	node := fs.String("node", "", "the kubelet's node name (static pods are <name>-<node>)")
	pids := fs.String("pids", "", "comma-separated pids of the agent's processes (idle cost)")
	logDir := fs.String("log-dir", os.TempDir(), "log directory of the raw CRI agent's pods")
	runs := fs.Int("runs", 5, "single-pod starts measured")
	kills := fs.Int("kills", 10, "containers killed behind the agent's back (one pod each)")
	big := fs.Bool("big", true, "run the 50-pod rows")
	idle := fs.Duration("idle", 30*time.Second, "idle cost sampling period (0: skip)")
	settle := fs.Duration("settle", 5*time.Second, "after each deletion, wait up to this long for the agent to remove the sandboxes before the next measure (negative: no wait)")
	paired := fs.Bool("paired", true, "also alternate single-pod starts with the raw CRI floor on the same runtime (agents syncpod and kubelet)")
	scale := fs.Int("scale", 0, "run only the many-pods rows with this many pods (crisim --mode simulated)")
	plegMetrics := fs.String("pleg-metrics", "", "the PLEG's /metrics URL (many-pods rows)")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on each wait (pods started, sandboxes stopped)")
	label := fs.String("label", "", "the agent's column name in tables (default the agent's name; e.g. \"syncpod on crisim\")")
	only := fs.String("only", "", "comma-separated measure name prefixes to run")
	out := fs.String("out", "", "JSON report file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	rt, err := bench.Dial(ctx, *endpoint)
	if err != nil {
		log.Error("cannot connect to the runtime", "endpoint", *endpoint, "err", err)
		return 1
	}
	followEvents(ctx, log, rt, *endpoint)
	files := bench.FileAgent{Dir: *manifestDir, Image: *image}
	var a bench.Agent
	switch *agent {
	case "cri":
		a = &bench.RawCRI{RT: rt, Image: *image, LogDir: *logDir}
	case "kubelet":
		a = bench.Kubelet{FileAgent: files, Node: *node}
	case "syncpod":
		conn, err := dialPlanner(log, *planner)
		if err != nil {
			return 2
		}
		defer conn.Close()
		sp := bench.Syncpod{FileAgent: files, Planner: plannerv1.NewPlannerServiceClient(conn)}
		if *ctl != "" {
			sp.CLI = []string{*ctl, "--server", *planner}
		}
		a = sp
	default:
		fmt.Fprintf(stderr, "--agent: %q is not syncpod, kubelet or cri\n", *agent)
		return 2
	}
	pidList, err := parsePIDs(*pids)
	if err != nil {
		fmt.Fprintf(stderr, "--pids: %v\n", err)
		return 2
	}
	var floor *bench.RawCRI
	if *paired && *agent != "cri" {
		floor = &bench.RawCRI{RT: rt, Image: *image, LogDir: *logDir}
	}
	rep := bench.Report{Agent: a.Name(), Runtime: rt.Version(ctx), Started: time.Now(), Load: bench.LoadAverage()}
	res, err := bench.Run(ctx, rt, a, bench.Options{Runs: *runs, Kills: *kills, Big: *big, Idle: *idle, Settle: *settle, Floor: floor, Scale: *scale, PLEGMetrics: *plegMetrics, Image: *image, Timeout: *timeout, PIDs: pidList, Only: splitList(*only), Logger: log})
	rep.Results = res
	if *label != "" {
		rep.Agent = *label
	}
	return finish(log, err, reportFile{rep, *out})
}

// measureAPIServer times pods created through a kube-apiserver and bound
// to one node until a watch sees them Running (bench.MeasureAPIServerRunning).
func measureAPIServer(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("measure-apiserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiFlags := addAPIServerFlags(fs)
	node := fs.String("node", "", "the node the pods are bound to (spec.nodeName)")
	image := fs.String("image", "localhost/syncpod/busybox:1.36", "container image (present in the node's runtime)")
	endpoint := fs.String("cri-endpoint", "", "the node's CRI endpoint (unix:///...): its version for the report, and its timestamps to split each time into the node's share and the runtime's")
	runs := fs.Int("runs", 20, "rounds measured (create, Running, delete, gone)")
	warmup := fs.Int("warmup", 2, "rounds run first and not counted")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on each round and on the node turning Ready")
	label := fs.String("label", "", "the column name in tables (e.g. kubelet)")
	out := fs.String("out", "", "JSON report file (default stdout)")
	vsNode := fs.String("versus-node", "", "a second node of the API server: each round then measures one pod on each, the first node first in even rounds, the second in odd ones, and the second's report carries the per-round ratios")
	vsEndpoint := fs.String("versus-cri-endpoint", "", "the second node's CRI endpoint (as --cri-endpoint)")
	vsLabel := fs.String("versus-label", "", "the second node's column name (e.g. syncpod)")
	vsOut := fs.String("versus-out", "", "the second node's JSON report file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !apiFlags.set() || *node == "" || *label == "" {
		fmt.Fprintln(stderr, "measure-apiserver: --server, --ca, --node and --label are required")
		return 2
	}
	if *vsNode != "" && (*vsLabel == "" || *vsOut == "" || *out == "") {
		fmt.Fprintln(stderr, "measure-apiserver: --versus-node needs --versus-label, --versus-out and --out")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	api, err := apiFlags.client()
	if err != nil {
		log.Error("cannot reach the API server", "err", err)
		return 1
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	err = api.EnsureDefaultServiceAccount(rctx)
	if err == nil {
		err = api.WaitNodeReady(rctx, *node)
	}
	if err == nil && *vsNode != "" {
		err = api.WaitNodeReady(rctx, *vsNode)
	}
	cancel()
	if err != nil {
		log.Error("the control plane or the node is not ready", "err", err)
		return 1
	}
	if *vsNode != "" {
		return measureAPIVersus(ctx, log, api, [2]string{*node, *vsNode}, [2]string{*endpoint, *vsEndpoint},
			[2]string{*label, *vsLabel}, [2]string{*out, *vsOut}, *image, *warmup, *runs, *timeout)
	}
	rep := bench.Report{Agent: *label, Started: time.Now(), Load: bench.LoadAverage()}
	var rt *bench.Runtime
	if *endpoint != "" {
		if rt, err = bench.Dial(ctx, *endpoint); err != nil {
			log.Error("cannot connect to the runtime", "endpoint", *endpoint, "err", err)
			return 1
		}
		rep.Runtime = rt.Version(ctx)
	}
	s, err := api.MeasureAPIToRunning(ctx, rt, *node, *image, *warmup, *runs, *timeout, log)
	for _, r := range []bench.Result{
		{Measure: bench.MeasureAPIServerRunning, Agent: *label, Seconds: s.Running},
		{Measure: bench.MeasureAPIServerNode, Agent: *label, Seconds: s.Node},
		{Measure: bench.MeasureAPIServerRuntime, Agent: *label, Seconds: s.Runtime},
	} {
		if len(r.Seconds) > 0 {
			rep.Results = append(rep.Results, r)
		}
	}
	return finish(log, err, reportFile{rep, *out})
}

// measureAPIVersus is measure-apiserver on two nodes alternating
// (bench.APIServer.MeasureAPIAlternating): one report a node, the
// second's create → Running row with the per-round ratios to the first's.
func measureAPIVersus(ctx context.Context, log *slog.Logger, api *bench.APIServer, nodes, endpoints, labels, outs [2]string,
	image string, warmup, runs int, timeout time.Duration) int {
	var an [2]bench.APINode
	var reps [2]bench.Report
	started, load := time.Now(), bench.LoadAverage()
	for k := range 2 {
		an[k].Name = nodes[k]
		reps[k] = bench.Report{Agent: labels[k], Started: started, Load: load}
		if endpoints[k] == "" {
			continue
		}
		rt, err := bench.Dial(ctx, endpoints[k])
		if err != nil {
			log.Error("cannot connect to the runtime", "endpoint", endpoints[k], "err", err)
			return 1
		}
		an[k].Runtime, reps[k].Runtime = rt, rt.Version(ctx)
	}
	s, ratios, err := api.MeasureAPIAlternating(ctx, an, image, warmup, runs, timeout, log)
	for k := range 2 {
		for _, r := range []bench.Result{
			{Measure: bench.MeasureAPIServerRunning, Agent: labels[k], Seconds: s[k].Running},
			{Measure: bench.MeasureAPIServerNode, Agent: labels[k], Seconds: s[k].Node},
			{Measure: bench.MeasureAPIServerRuntime, Agent: labels[k], Seconds: s[k].Runtime},
		} {
			if len(r.Seconds) > 0 {
				reps[k].Results = append(reps[k].Results, r)
			}
		}
	}
	if len(ratios) > 0 && len(reps[1].Results) > 0 {
		r := &reps[1].Results[0]
		r.PairedWith, r.PerRound = labels[0], ratios.Quantile(0.5)
		r.Note = fmt.Sprintf("[alternating round by round; median per-round ratio %s / %s %.2f×", labels[1], labels[0], r.PerRound)
		if lo, hi, ok := ratios.MedianCI(0.95); ok {
			r.PerRoundCI = &[2]float64{lo, hi}
			r.Note += fmt.Sprintf(" (95 %% CI %.2f–%.2f×)", lo, hi)
		}
		r.Note += "]"
	}
	return finish(log, err, reportFile{reps[0], outs[0]}, reportFile{reps[1], outs[1]})
}

// measureDensity runs the density rows (bench.APIServer.Density) on the
// kubelet's node and syncpod's, two nodes of one API server, alternating,
// and writes one report of both.
func measureDensity(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("measure-density", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiFlags := addAPIServerFlags(fs)
	image := fs.String("image", "localhost/syncpod/busybox:1.36", "container image (present in both runtimes)")
	kNode := fs.String("kubelet-node", "", "the kubelet's node name")
	kEndpoint := fs.String("kubelet-cri-endpoint", "", "the kubelet's runtime (unix:///...): its version, and what its pods leave removed between turns")
	kPIDs := fs.String("kubelet-pids", "", "comma-separated pids of the kubelet's processes (the idle cost)")
	sNode := fs.String("syncpod-node", "", "syncpod's node name")
	sEndpoint := fs.String("syncpod-cri-endpoint", "", "syncpod's runtime (unix:///...)")
	sPIDs := fs.String("syncpod-pids", "", "comma-separated pids of syncpod's processes (node agent, planner, executor, PLEG)")
	kMetrics := fs.String("kubelet-metrics", "", "the kubelet's /metrics URL (https on loopback, its certificate not checked): the PLEG relist row of the churn")
	sMetrics := fs.String("syncpod-pleg-metrics", "", "syncpod's PLEG's /metrics URL: the PLEG relist row of the churn")
	kRTPIDs := fs.String("kubelet-runtime-pids", "", "comma-separated pids of the kubelet's runtime daemon (its CPU over the churn)")
	sRTPIDs := fs.String("syncpod-runtime-pids", "", "comma-separated pids of syncpod's runtime daemon (its CPU over the churn)")
	kRTMetrics := fs.String("kubelet-runtime-metrics", "", "the kubelet's runtime's Prometheus URL with gRPC handling histograms (containerd's /v1/metrics): the CRI calls of each burst")
	sRTMetrics := fs.String("syncpod-runtime-metrics", "", "syncpod's runtime's Prometheus URL (as --kubelet-runtime-metrics)")
	rounds := fs.Int("rounds", 2, "rounds (each agent's turn: the paced pods, then each burst)")
	pods := fs.Int("pods", 100, "pods created at --rate (0: no throughput row)")
	rate := fs.Float64("rate", 5, "pods created per second")
	bursts := fs.String("bursts", "110,250", "comma-separated pod counts created at once (the first is also idled at)")
	idle := fs.Duration("idle", 30*time.Second, "idle CPU window at the first burst's pods (0: no idle row)")
	idleSettle := fs.Duration("idle-settle", 10*time.Second, "wait before the idle window")
	churn := fs.Duration("churn", 0, "after the last burst runs, create and delete --churn-rate pods/s each on top of it for this long, then delete what is left (0: no churn)")
	churnRate := fs.Float64("churn-rate", 10, "pods created (and as many deleted) per second during the churn")
	quiet := fs.Duration("quiet", 2*time.Minute, "before each turn, wait at most this long for the machine's cores to be less than --quiet-busy percent busy over 3 s (0: no wait)")
	quietBusy := fs.Float64("quiet-busy", 50, "how busy, in percent of all cores, the machine may be when a turn begins (see --quiet)")
	churnWait := fs.Duration("churn-wait", 3*time.Minute, "after the churn, wait at most this long for its pods to start and the deleted ones to be gone, then for what is left to be deleted; a node not done by then is reported behind")
	parallel := fs.Int("parallel", 20, "create and delete requests in flight at once in a burst")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound on each wait (all started, all gone)")
	out := fs.String("out", "", "JSON report file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !apiFlags.set() || *kNode == "" || *sNode == "" {
		fmt.Fprintln(stderr, "measure-density: --server, --ca, --kubelet-node and --syncpod-node are required")
		return 2
	}
	var burstList []int
	for _, b := range splitList(*bursts) {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "--bursts: %q is not a positive pod count\n", b)
			return 2
		}
		burstList = append(burstList, n)
	}
	if *pods < 0 || *rate <= 0 || *rounds < 1 || *parallel < 1 || *churn < 0 || *churnRate <= 0 || (*churn > 0 && len(burstList) == 0) {
		fmt.Fprintln(stderr, "measure-density: --pods and --churn must not be negative; --rate, --rounds, --parallel and --churn-rate must be positive; a churn needs a burst")
		return 2
	}
	kp, sp, err := parseAgentPIDs(*kPIDs, *sPIDs)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	api, err := apiFlags.client()
	if err != nil {
		log.Error("cannot reach the API server", "err", err)
		return 1
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = api.EnsureDefaultServiceAccount(rctx)
	for _, n := range []string{*kNode, *sNode} {
		if err == nil {
			err = api.WaitNodeReady(rctx, n)
		}
	}
	cancel()
	if err != nil {
		log.Error("the control plane or a node is not ready", "err", err)
		return 1
	}
	side := func(agent, node, endpoint string, pids []int) (bench.DensitySide, error) {
		s := bench.DensitySide{Agent: agent, Node: node, PIDs: pids}
		if endpoint != "" {
			rt, err := bench.Dial(ctx, endpoint)
			if err != nil {
				return s, fmt.Errorf("%s's runtime: %w", agent, err)
			}
			s.Runtime = rt
		}
		return s, nil
	}
	ks, err := side("kubelet", *kNode, *kEndpoint, kp)
	if err != nil {
		log.Error("cannot connect", "err", err)
		return 1
	}
	ss, err := side("syncpod", *sNode, *sEndpoint, sp)
	if err != nil {
		log.Error("cannot connect", "err", err)
		return 1
	}
	if ks.RuntimePIDs, err = parsePIDs(*kRTPIDs); err != nil {
		fmt.Fprintln(stderr, "--kubelet-runtime-pids:", err)
		return 2
	}
	if ss.RuntimePIDs, err = parsePIDs(*sRTPIDs); err != nil {
		fmt.Fprintln(stderr, "--syncpod-runtime-pids:", err)
		return 2
	}
	ks.RuntimeMetrics, ss.RuntimeMetrics = *kRTMetrics, *sRTMetrics
	if *kMetrics != "" {
		// The kubelet serves its metrics with a certificate it signed
		// itself; the address is the loopback one the script gave it.
		ks.PLEGMetrics, ks.PLEGMetric = *kMetrics, bench.KubeletRelistMetric
		ks.MetricsClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	if *sMetrics != "" {
		ss.PLEGMetrics, ss.PLEGMetric = *sMetrics, bench.RelistMetric
	}
	rep, err := api.Density(ctx, ks, ss, bench.DensityOptions{Rounds: *rounds, Pods: *pods, Rate: *rate, Bursts: burstList,
		Idle: *idle, IdleSettle: *idleSettle, Churn: *churn, ChurnRate: *churnRate, ChurnWait: *churnWait, Quiet: *quiet, QuietBusy: *quietBusy, Parallel: *parallel, Image: *image, Timeout: *timeout, Logger: log})
	return finish(log, err, reportFile{rep, *out})
}

// versus runs bench.Versus: the kubelet (static pods in its manifest
// directory, on its runtime) against syncpod (its manifest directory, on
// another runtime), alternating, and writes one report per agent.
func versus(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("versus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kEndpoint := fs.String("kubelet-cri-endpoint", "", "the kubelet's runtime (unix:///...)")
	kDir := fs.String("kubelet-manifest-dir", "", "the kubelet's staticPodPath")
	node := fs.String("node", "", "the kubelet's node name (static pods are <name>-<node>)")
	sEndpoint := fs.String("syncpod-cri-endpoint", "", "syncpod's runtime (unix:///...), another one than the kubelet's")
	sDir := fs.String("syncpod-manifest-dir", "", "syncpod's --manifest-dir")
	planner := fs.String("planner", "", "syncpod planner address (unix:///path)")
	image := fs.String("image", "localhost/syncpod/busybox:1.36", "container image (present in both runtimes)")
	runs := fs.Int("runs", 5, "single-pod rounds (the 10-pod rows run half as many, at least 2)")
	settle := fs.Duration("settle", 5*time.Second, "after each deletion, wait up to this long for the agent to remove the sandboxes")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on each wait")
	only := fs.String("only", "", "comma-separated measure name prefixes to run")
	kPIDs := fs.String("kubelet-pids", "", "comma-separated pids of the kubelet's processes (the CPU each start costs it)")
	sPIDs := fs.String("syncpod-pids", "", "comma-separated pids of syncpod's processes")
	outK := fs.String("out-kubelet", "", "the kubelet's JSON report")
	outS := fs.String("out-syncpod", "", "syncpod's JSON report")
	idle := fs.Duration("idle", 30*time.Second, "with both agents' pids: their CPU idle at once with 10 pods each, over this window (0: skip)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *kEndpoint == "" || *sEndpoint == "" || *kDir == "" || *sDir == "" || *outK == "" || *outS == "" {
		fmt.Fprintln(stderr, "versus: --kubelet-cri-endpoint, --kubelet-manifest-dir, --syncpod-cri-endpoint, --syncpod-manifest-dir, --out-kubelet and --out-syncpod are required")
		return 2
	}
	kp, sp, err := parseAgentPIDs(*kPIDs, *sPIDs)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	krt, err := bench.Dial(ctx, *kEndpoint)
	if err != nil {
		log.Error("cannot connect to the kubelet's runtime", "err", err)
		return 1
	}
	srt, err := bench.Dial(ctx, *sEndpoint)
	if err != nil {
		log.Error("cannot connect to syncpod's runtime", "err", err)
		return 1
	}
	followEvents(ctx, log, krt, *kEndpoint)
	followEvents(ctx, log, srt, *sEndpoint)
	conn, err := dialPlanner(log, *planner)
	if err != nil {
		return 2
	}
	defer conn.Close()
	k := bench.Kubelet{FileAgent: bench.FileAgent{Dir: *kDir, Image: *image}, Node: *node}
	s := bench.Syncpod{FileAgent: bench.FileAgent{Dir: *sDir, Image: *image}, Planner: plannerv1.NewPlannerServiceClient(conn)}
	started, load := time.Now(), bench.LoadAverage()
	kres, sres, err := bench.Versus(ctx, bench.Side{Agent: k, Runtime: krt, PIDs: kp}, bench.Side{Agent: s, Runtime: srt, PIDs: sp},
		bench.Options{Runs: *runs, Settle: *settle, Timeout: *timeout, Idle: *idle, Only: splitList(*only), Logger: log})
	if code := finish(log, err,
		reportFile{bench.Report{Agent: k.Name(), Runtime: krt.Version(ctx), Started: started, Load: load, Results: kres}, *outK},
		reportFile{bench.Report{Agent: s.Name(), Runtime: srt.Version(ctx), Started: started, Load: load, Results: sres}, *outS}); code != 0 {
		return code
	}
	log.Info("done", "load_average_at_end", fmt.Sprint(bench.LoadAverage()))
	return 0
}

// reportFile is a report and where it goes (empty: stdout).
type reportFile struct {
	rep any
	out string
}

// finish writes every report, also after a failed run (the rounds it
// measured are kept), and returns the exit code: 1 when a write or the run
// (runErr) failed.
func finish(log *slog.Logger, runErr error, reports ...reportFile) int {
	for _, r := range reports {
		if err := writeJSON(r.rep, r.out); err != nil {
			log.Error("cannot write the report", "err", err)
			return 1
		}
	}
	if runErr != nil {
		log.Error("run failed", "err", runErr)
		return 1
	}
	return 0
}

// readReports reads JSON reports (what measure, versus and
// measure-apiserver write).
func readReports(files []string) ([]bench.Report, error) { return readJSON[bench.Report](files) }

// readJSON reads one JSON document of T from each file, in order.
func readJSON[T any](files []string) ([]T, error) {
	var out []T
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r T
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// followEvents has the waits for pods to start, stop and go look at rt on
// its CRI events rather than list it every 10 ms (bench.FollowEvents).
func followEvents(ctx context.Context, log *slog.Logger, rt *bench.Runtime, endpoint string) {
	if rt.FollowEvents(ctx) {
		log.Info("following the runtime's CRI events: waits look at it on each event", "endpoint", endpoint)
		return
	}
	log.Info("the runtime offers no CRI events: waits list it every 10 ms", "endpoint", endpoint)
}

// dialPlanner makes the client connection to the syncpod planner at addr
// (--planner): a unix socket, as the bench scripts start it (a TCP
// address would need a client certificate, which the bench has none
// of); a bad address is logged as a bad flag.
func dialPlanner(log *slog.Logger, addr string) (*grpc.ClientConn, error) {
	conn, err := server.DialPolicy{}.Dial(addr)
	if err != nil {
		log.Error("bad --planner", "err", err)
		return nil, err
	}
	return conn, nil
}

// splitList splits a comma-separated flag value; empty is none.
func splitList(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// parsePIDs reads a comma-separated list of process ids.
// parseAgentPIDs parses the two agents' --kubelet-pids and --syncpod-pids;
// the error names the flag.
func parseAgentPIDs(kubelet, syncpod string) (kp, sp []int, err error) {
	if kp, err = parsePIDs(kubelet); err != nil {
		return nil, nil, fmt.Errorf("--kubelet-pids: %w", err)
	}
	if sp, err = parsePIDs(syncpod); err != nil {
		return nil, nil, fmt.Errorf("--syncpod-pids: %w", err)
	}
	return kp, sp, nil
}

func parsePIDs(list string) ([]int, error) {
	var pids []int
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, fmt.Errorf("%d is not a process id", n)
		}
		pids = append(pids, n)
	}
	return pids, nil
}

// apiServerFlags are how a subcommand reaches the kube-apiserver.
type apiServerFlags struct{ server, ca, token *string }

func addAPIServerFlags(fs *flag.FlagSet) apiServerFlags {
	return apiServerFlags{
		server: fs.String("server", "", "the kube-apiserver's URL (https://127.0.0.1:PORT)"),
		ca:     fs.String("ca", "", "CA file of the API server's serving certificate"),
		token:  fs.String("token", "", "bearer token (a user allowed to create and delete pods and read nodes)"),
	}
}

// set says whether the server and its CA are named (both are required).
func (f apiServerFlags) set() bool { return *f.server != "" && *f.ca != "" }

func (f apiServerFlags) client() (*bench.APIServer, error) {
	return bench.NewAPIServer(*f.server, *f.ca, *f.token)
}
