package manifest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func podYAML(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: c, image: %s}]\n", name, image)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// render summarises a diff as "added a (a.yaml)" and "error b.json: ..." lines.
func render(d Diff) []string {
	var out []string
	for _, c := range d.Changes {
		out = append(out, fmt.Sprintf("%s %s (%s)", c.Type, c.Pod.GetName(), filepath.Base(c.File)))
	}
	for _, e := range d.Errors {
		line := "error " + filepath.Base(e.File)
		for _, p := range e.Kept {
			line += " (kept " + p.GetName() + ")"
		}
		out = append(out, line)
	}
	return out
}

func scan(t *testing.T, s *Source) []string {
	t.Helper()
	d, err := s.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return render(d)
}

func TestSourceLifecycle(t *testing.T) {
	dir := t.TempDir()
	s := NewSource(Options{Dir: dir})
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"empty directory", func() {}, nil},
		{"files appear; hidden and other files ignored", func() {
			write(t, dir, "a.yaml", podYAML("a", "busybox:1"))
			write(t, dir, "b.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
			write(t, dir, ".hidden.yaml", podYAML("hidden", "x"))
			write(t, dir, "notes.txt", "not a manifest")
			_ = os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700)
		}, []string{"added a (a.yaml)", "added b (b.json)"}},
		{"nothing changed", func() {}, nil},
		{"rewritten with the same content", func() { write(t, dir, "a.yaml", podYAML("a", "busybox:1")) }, nil},
		{"a changes", func() { write(t, dir, "a.yaml", podYAML("a", "busybox:2")) }, []string{"updated a (a.yaml)"}},
		{"b breaks: reported, b kept", func() { write(t, dir, "b.json", `{"apiVersion":"v1","kind":"Pod",`) }, []string{"error b.json (kept b)"}},
		{"still broken: reported once", func() {}, nil},
		{"a broken file leaves other pods alone", func() { write(t, dir, "a.yaml", podYAML("a", "busybox:3")) }, []string{"updated a (a.yaml)"}},
		{"b fixed with its old content: nothing to do", func() {
			write(t, dir, "b.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
		}, nil},
		{"a pod defined twice stays with its owner", func() { write(t, dir, "0-dup.yaml", podYAML("a", "other")) }, []string{"error 0-dup.yaml"}},
		{"a multi-document file", func() {
			_ = os.Remove(filepath.Join(dir, "0-dup.yaml"))
			write(t, dir, "multi.yaml", podYAML("m1", "x")+"---\n"+podYAML("m2", "x"))
		}, []string{"added m1 (multi.yaml)", "added m2 (multi.yaml)"}},
		{"one document removed from it", func() { write(t, dir, "multi.yaml", podYAML("m2", "x")) }, []string{"removed m1 (multi.yaml)"}},
		{"a pod moves to another file", func() {
			_ = os.Remove(filepath.Join(dir, "multi.yaml"))
			write(t, dir, "moved.yaml", podYAML("m2", "x"))
		}, nil},
		{"files removed", func() {
			_ = os.Remove(filepath.Join(dir, "a.yaml"))
			_ = os.Remove(filepath.Join(dir, "moved.yaml"))
		}, []string{"removed a (a.yaml)", "removed m2 (moved.yaml)"}},
		{"a file removed while broken removes its pods", func() {
			write(t, dir, "b.json", "{")
			_ = scan(t, s)
			_ = os.Remove(filepath.Join(dir, "b.json"))
		}, []string{"removed b (b.json)"}},
	}
	for _, st := range steps {
		st.do()
		got := scan(t, s)
		if strings.Join(got, "\n") != strings.Join(st.want, "\n") {
			t.Fatalf("%s: diff =\n%s\nwant\n%s", st.name, strings.Join(got, "\n"), strings.Join(st.want, "\n"))
		}
	}
}

func TestSourceFileErrorCarriesParseIssues(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "bad.yaml", podYAML("x", "i")+"  volumes: [{name: v, nfs: {server: s, path: /}}]\n")
	d, err := NewSource(Options{Dir: dir}).Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Errors) != 1 || !strings.Contains(d.Errors[0].Err.Error(), "spec.volumes[0].nfs: not supported") {
		t.Errorf("errors = %v", d.Errors)
	}
}

func TestSourceMissingDirectory(t *testing.T) {
	s := NewSource(Options{Dir: filepath.Join(t.TempDir(), "nope")})
	if _, err := s.Scan(); err == nil {
		t.Error("Scan of a missing directory succeeded")
	}
}

func TestSourceRunScansAtOnceAndOnEveryTick(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "i"))
	tick := make(chan time.Time)
	stopped := make(chan struct{})
	s := NewSource(Options{Dir: dir, Interval: time.Hour, DisableWatch: true, NewTicker: func(d time.Duration) (<-chan time.Time, func()) {
		if d != time.Hour {
			t.Errorf("ticker interval = %v", d)
		}
		return tick, func() { close(stopped) }
	}})
	diffs := make(chan []string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(_ context.Context, d Diff) []Change { diffs <- render(d); return nil })
	}()

	if got := <-diffs; fmt.Sprint(got) != "[added a (a.yaml)]" {
		t.Errorf("first diff = %v", got)
	}
	write(t, dir, "b.yaml", podYAML("b", "i"))
	tick <- time.Time{}
	if got := <-diffs; fmt.Sprint(got) != "[added b (b.yaml)]" {
		t.Errorf("second diff = %v", got)
	}
	tick <- time.Time{} // nothing changed: apply is not called
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run = %v", err)
	}
	<-stopped
	select {
	case d := <-diffs:
		t.Errorf("unexpected diff %v", d)
	default:
	}
}

func TestSourceRetryReportsFailedChangesAgain(t *testing.T) {
	dir := t.TempDir()
	s := NewSource(Options{Dir: dir})
	write(t, dir, "a.yaml", podYAML("a", "busybox:1"))
	d, err := s.Scan()
	if err != nil || len(d.Changes) != 1 {
		t.Fatalf("first scan %v %v", d, err)
	}
	s.Retry(d.Changes) // the store refused it (say, the old pod still terminates)
	if got := scan(t, s); strings.Join(got, ",") != "added a (a.yaml)" {
		t.Fatalf("after a failed add: %v, want it added again", got)
	}
	if got := scan(t, s); len(got) != 0 {
		t.Fatalf("after a good add: %v, want nothing", got)
	}
	_ = os.Remove(filepath.Join(dir, "a.yaml"))
	d, err = s.Scan()
	if err != nil || len(d.Changes) != 1 || d.Changes[0].Type != Removed {
		t.Fatalf("removal scan %v %v", d, err)
	}
	s.Retry(d.Changes)
	if got := scan(t, s); strings.Join(got, ",") != "removed a (a.yaml)" {
		t.Fatalf("after a failed removal: %v, want it removed again", got)
	}
}
