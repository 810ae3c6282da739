package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/syncpod/syncpod/bench"
	"github.com/syncpod/syncpod/bench/report"
)

// scaleNodes is `syncpod-bench scale-nodes`: one side's nodes, already
// started and listed in --nodes, loaded through the API server
// (bench.NodeScale); the report is JSON.
func scaleNodes(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("scale-nodes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiFlags := addAPIServerFlags(fs)
	nodesFile := fs.String("nodes", "", "the side's nodes, one a line: NAME KIND=PID... (its processes)")
	side := fs.String("side", "", "the side's name in the report (kubemark, syncpod)")
	version := fs.String("version", "", "what the side's nodes run, for the report")
	nodesStarted := fs.Float64("nodes-started", 0, "when the nodes' processes were started, in Unix seconds (date +%s.%N; 0: now)")
	perNode := fs.Int("pods-per-node", 30, "pods created a node")
	rate := fs.Float64("rate", 20, "pods created (then deleted) a second")
	settle := fs.Duration("settle", 15*time.Second, "how long the nodes are left once Ready before the idle window")
	idle := fs.Duration("idle", time.Minute, "how long the Ready nodes are measured without pods")
	image := fs.String("image", "registry.k8s.io/pause:3.10", "the pods' image (no node pulls it: both runtimes are simulated)")
	audit := fs.String("audit-log", "", "the API server's audit log (JSON lines, --audit-log-path)")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound on the nodes turning Ready and on each wait for the pods")
	every := fs.Duration("sample-every", 5*time.Second, "period of the CPU and memory samples under load")
	out := fs.String("out", "", "JSON report file (default stdout)")
	profileURL := fs.String("profile", "", "the side's process's pprof CPU profile URL (http://HOST:PORT/debug/pprof/profile): profile it under load and summarize it")
	profileOut := fs.String("profile-out", "", "where to keep that profile (pprof format)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !apiFlags.set() || *nodesFile == "" || *side == "" || *audit == "" {
		fmt.Fprintln(stderr, "scale-nodes: --server, --ca, --nodes, --side and --audit-log are required")
		return 2
	}
	if *perNode <= 0 || !(*rate > 0) || *idle <= 0 || *every <= 0 {
		fmt.Fprintln(stderr, "scale-nodes: --pods-per-node, --rate, --idle and --sample-every must be positive")
		return 2
	}
	f, err := os.Open(*nodesFile)
	if err != nil {
		fmt.Fprintf(stderr, "scale-nodes: --nodes: %v\n", err)
		return 2
	}
	nodes, err := bench.ParseNodesFile(f)
	f.Close()
	if err != nil || len(nodes) == 0 {
		fmt.Fprintf(stderr, "scale-nodes: --nodes %s: %v (and want one node or more)\n", *nodesFile, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	api, err := apiFlags.client()
	if err != nil {
		log.Error("cannot reach the API server", "err", err)
		return 1
	}
	var started time.Time
	if *nodesStarted > 0 {
		sec, frac := math.Modf(*nodesStarted)
		started = time.Unix(int64(sec), int64(frac*1e9))
	}
	rep, err := api.NodeScale(ctx, bench.NodeScaleOptions{
		Side: *side, Version: *version, Nodes: nodes, NodesStarted: started, PodsPerNode: *perNode, CreateRate: *rate,
		Settle: *settle, Idle: *idle, Image: *image, AuditLog: *audit, Timeout: *timeout, SampleEvery: *every,
		ProfileURL: *profileURL, ProfileOut: *profileOut, Logger: log,
	})
	return finish(log, err, reportFile{rep, *out})
}

// scaleTable is `syncpod-bench scale-table FILE...`: the Markdown tables
// of scale-nodes reports, one a node count.
func scaleTable(args []string, stdout, stderr io.Writer) int {
	reps, err := readScaleReports(args)
	if err != nil || len(reps) == 0 {
		fmt.Fprintf(stderr, "scale-table: want scale-nodes reports: %v\n", err)
		return 2
	}
	fmt.Fprint(stdout, report.ScaleTables(reps))
	return 0
}

// readScaleReports reads scale-nodes reports.
func readScaleReports(files []string) ([]bench.ScaleReport, error) {
	return readJSON[bench.ScaleReport](files)
}

func writeJSON(v any, out string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if out == "" {
		_, err = fmt.Println(string(b))
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// reportScale is `syncpod-bench report-scale`: the Scale section of
// scale-nodes reports (report.ScaleDocument) put into an existing
// benchmark document in place of the section of the same title, or at
// its end; the rest of the document and its plots are left as they are,
// so this target's run does not wipe the other targets' results.
func reportScale(args []string, now time.Time, stderr io.Writer) int {
	fs := flag.NewFlagSet("report-scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	doc := fs.String("doc", "docs/benchmarks.md", "the document (Markdown) to put the section into; created when missing")
	title := fs.String("title", "Scale: many nodes under one control plane", "the section's heading")
	command := fs.String("command", "", "what made the run (e.g. \"make bench-scale\")")
	var components componentsFlag
	fs.Var(&components, "component", "a version the reports do not carry: NAME=VERSION (repeat)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	reps, err := readScaleReports(fs.Args())
	if err != nil || len(reps) == 0 {
		fmt.Fprintf(stderr, "report-scale: want scale-nodes reports as arguments: %v\n", err)
		return 2
	}
	old, err := os.ReadFile(*doc)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		fmt.Fprintf(stderr, "report-scale: %v\n", err)
		return 1
	}
	plotDir := strings.TrimSuffix(*doc, ".md")
	in := report.Input{Command: *command, Generated: now, Machine: report.ReadMachine(os.DirFS("/")),
		Components: append(components, report.Component{Name: "Go", Version: runtime.Version()}), PlotDir: filepath.Base(plotDir)}
	section, plots, err := report.ScaleDocument(report.ScaleSection{Title: *title, Reports: reps}, in)
	if err != nil {
		fmt.Fprintf(stderr, "report-scale: %v\n", err)
		return 1
	}
	if len(old) == 0 {
		old = []byte("# Benchmarks\n")
	}
	if err := writeFiles(*doc, plotDir, []byte(report.SpliceSection(string(old), *title, section)), plots); err != nil {
		fmt.Fprintf(stderr, "report-scale: %v\n", err)
		return 1
	}
	return 0
}
