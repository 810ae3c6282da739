package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/syncpod/syncpod/bench"
	"github.com/syncpod/syncpod/bench/report"
)

// sectionsFlag collects --section TITLE=FILE,FILE... in order.
type sectionsFlag []sectionFiles

type sectionFiles struct {
	title string
	files []string
}

func (s *sectionsFlag) String() string { return fmt.Sprint(len(*s), " sections") }

func (s *sectionsFlag) Set(v string) error {
	title, files, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(title) == "" || strings.TrimSpace(files) == "" {
		return errors.New("want TITLE=FILE[,FILE...]")
	}
	*s = append(*s, sectionFiles{strings.TrimSpace(title), strings.Split(files, ",")})
	return nil
}

// componentsFlag collects --component NAME=VERSION in order.
type componentsFlag []report.Component

func (c *componentsFlag) String() string { return fmt.Sprint(len(*c), " components") }

func (c *componentsFlag) Set(v string) error {
	name, version, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return errors.New("want NAME=VERSION")
	}
	*c = append(*c, report.Component{Name: strings.TrimSpace(name), Version: strings.TrimSpace(version)})
	return nil
}

// writeDocument is `syncpod-bench report`: the benchmark document of a
// run's reports (report.Render), written to --out with its plots in the
// directory of the same name without .md (docs/benchmarks.md,
// docs/benchmarks/). The sections of the document already at --out that
// this run did not make (the other runtime's, the Density and Scale
// sections of their own targets) are carried over with their plots
// (report.Merge); the SVG files no section links to any more are removed.
// With --density only that section is replaced (or added), the rest kept.
func writeDocument(args []string, now time.Time, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "docs/benchmarks.md", "the document (Markdown); its plots go to the directory of its name without .md")
	command := fs.String("command", "", "what made the run (e.g. \"make bench-kubelet\")")
	var sections sectionsFlag
	var components componentsFlag
	fs.Var(&sections, "section", "a table: TITLE=FILE[,FILE...], the reports bench.Table puts side by side (repeat for more, in order)")
	var scale sectionsFlag
	fs.Var(&scale, "scale", "a section of many nodes: TITLE=FILE[,FILE...], scale-nodes reports (repeat for more)")
	fs.Var(&components, "component", "a version the reports do not carry: NAME=VERSION (repeat)")
	density := fs.String("density", "", "density reports (syncpod-bench measure-density), FILE[,FILE...]: replace the document's density section with them, the rest kept; the first is plotted, the further ones (other sizes, e.g. a churn) are tables after it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || !strings.HasSuffix(*out, ".md") || (len(sections)+len(scale) == 0) == (*density == "") {
		fmt.Fprintln(stderr, "report: want --out FILE.md and one --section or --scale or more, or --density FILE, and no arguments")
		return 2
	}
	plotDir := strings.TrimSuffix(*out, ".md")
	if *density != "" {
		return writeDensity(*out, plotDir, *density, *command, components, now, stderr)
	}
	in := report.Input{
		Command:    *command,
		Generated:  now,
		Machine:    report.ReadMachine(os.DirFS("/")),
		Components: append(components, report.Component{Name: "Go", Version: runtime.Version()}),
	}
	for _, s := range sections {
		reports, err := readReports(s.files)
		if err != nil {
			fmt.Fprintf(stderr, "report: %s: %v\n", s.title, err)
			return 1
		}
		in.Sections = append(in.Sections, report.Section{Title: s.title, Reports: reports})
	}
	for _, s := range scale {
		reps, err := readScaleReports(s.files)
		if err != nil {
			fmt.Fprintf(stderr, "report: %s: %v\n", s.title, err)
			return 1
		}
		in.Scale = append(in.Scale, report.ScaleSection{Title: s.title, Reports: reps})
	}
	in.PlotDir = filepath.Base(plotDir)
	doc, err := report.Render(in)
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	if old, err := os.ReadFile(*out); err == nil {
		doc.Markdown = []byte(report.Merge(string(doc.Markdown), string(old)))
	} else if !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	if err := writeFiles(*out, plotDir, doc.Markdown, doc.Plots); err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	return 0
}

// writeFiles writes the plots into plotDir and the document to out, then
// removes the SVG files of plotDir the document no longer links to (an
// earlier run's of the sections this one replaced).
func writeFiles(out, plotDir string, markdown []byte, plots []report.Plot) error {
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return err
	}
	for _, p := range plots {
		if err := os.WriteFile(filepath.Join(plotDir, p.Name), p.SVG, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(out, markdown, 0o644); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(plotDir, "*.svg"))
	if err != nil {
		return err
	}
	dir := filepath.Base(plotDir) + "/"
	for _, f := range files {
		if !bytes.Contains(markdown, []byte("]("+dir+filepath.Base(f)+")")) {
			err = errors.Join(err, os.Remove(f))
		}
	}
	return err
}

// writeDensity renders the density report in file (FILE[,FILE...]: the
// further ones are runs of other sizes, each a table after the first's
// plots) as the density section
// of the document at out (report.RenderDensity), the rest of the document
// kept as it is (a new one with just its title when there is none), and
// rewrites the section's plots in plotDir.
func writeDensity(out, plotDir, file, command string, components []report.Component, now time.Time, stderr io.Writer) int {
	var reps []bench.DensityReport
	for _, f := range strings.Split(file, ",") {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 1
		}
		var rep bench.DensityReport
		if err := json.Unmarshal(b, &rep); err != nil {
			fmt.Fprintf(stderr, "report: %s: %v\n", f, err)
			return 1
		}
		reps = append(reps, rep)
	}
	section, plots, err := report.RenderDensity(report.DensityInput{Report: reps[0], More: reps[1:], Command: command, Generated: now,
		Components: append(components, report.Component{Name: "Go", Version: runtime.Version()}), PlotDir: filepath.Base(plotDir)})
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	doc := "# Benchmarks\n"
	if old, err := os.ReadFile(out); err == nil {
		doc = string(old)
	} else if !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	if err := writeFiles(out, plotDir, []byte(report.SpliceSection(doc, report.DensityTitle, section)), plots); err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	return 0
}
