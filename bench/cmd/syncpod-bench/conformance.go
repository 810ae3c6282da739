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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var nodes []conformance.Node
	for _, n := range []struct{ name, files string }{{"kubelet", *kubelet}, {"syncpod", *syncpod}} {
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
		fmt.Fprintln(stderr, "conformance: give --kubelet and/or --syncpod reports")
		return 2
	}
	var b bytes.Buffer
	if err := conformance.Render(&b, *title, nodes); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
