package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/syncpod/syncpod/bench/conformance"
)

// conformanceReport writes the page comparing the nodes' conformance runs
// (docs/conformance.md) from ginkgo's JSON reports.
func conformanceReport(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubelet := fs.String("kubelet", "", "the kubelet run's ginkgo JSON reports, comma-separated (mk/conformance.sh: .tmp/conformance/reports/kubelet/*.json)")
	syncpod := fs.String("syncpod", "", "the syncpod run's ginkgo JSON reports, comma-separated")
	out := fs.String("out", "docs/conformance.md", "the page to write")
	title := fs.String("title", "Upstream sig-node conformance: syncpod and the kubelet", "the page's title")
	var named []struct{ name, files string }
	fs.Func("node", "NAME=REPORTS: a node's run under its own name (\"syncpod, containerd 1.6=a.json,b.json\"); repeatable, in the page's order", func(v string) error {
		name, files, ok := strings.Cut(v, "=")
		if !ok || name == "" || files == "" {
			return fmt.Errorf("want NAME=REPORTS, got %q", v)
		}
		named = append(named, struct{ name, files string }{name, files})
		return nil
	})
	var why []conformance.Why
	fs.Func("why", "SUBSTRING=REASON: why the specs whose names contain SUBSTRING fail on every node; repeatable", func(v string) error {
		m, text, ok := strings.Cut(v, "=")
		if !ok || m == "" || text == "" {
			return fmt.Errorf("want SUBSTRING=REASON, got %q", v)
		}
		why = append(why, conformance.Why{Match: m, Text: text})
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var nodes []conformance.Node
	for _, n := range append([]struct{ name, files string }{{"kubelet", *kubelet}, {"syncpod", *syncpod}}, named...) {
		if n.files == "" {
			continue
		}
		run, err := conformance.Read(strings.Split(n.files, ",")...)
		if err != nil {
			fmt.Fprintf(stderr, "--%s: %v\n", n.name, err)
			return 1
		}
		nodes = append(nodes, conformance.Node{Name: n.name, Run: run})
	}
	if len(nodes) == 0 {
		fmt.Fprintln(stderr, "conformance: give --kubelet, --syncpod or --node reports")
		return 2
	}
	var b bytes.Buffer
	if err := conformance.Render(&b, *title, nodes, why...); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
