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

// fakeWriters makes a source's reads report the writer states of open
// (path base → state); others are read as the kernel vouched for them.
func fakeWriters(s *Source, open map[string]writeState) {
	s.read = func(path string, check bool) ([]byte, writeState, error) {
		data, err := os.ReadFile(path)
		st, ok := open[filepath.Base(path)]
		switch {
		case err != nil:
			return nil, writeUnknown, err
		case !ok:
			return data, writeClosed, nil
		case st == writeOpen && !check:
			return data, writeUnknown, nil
		case st == writeOpen:
			return nil, writeOpen, nil
		}
		return data, st, nil
	}
}

func TestScanLeavesAFileOpenForWritingUntilWriterWait(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "i"))
	write(t, dir, "b.yaml", podYAML("b", "i"))
	now := time.Unix(1000, 0)
	s := NewSource(Options{Dir: dir, WriterWait: 2 * time.Second, Now: func() time.Time { return now }})
	states := map[string]writeState{"a.yaml": writeOpen}
	fakeWriters(s, states)

	d, wait, err := s.scan(false)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(render(d)); got != "[added b (b.yaml)]" || wait.writing != 1 {
		t.Fatalf("a.yaml open for writing: %v, %d writing; want only b and 1", got, wait.writing)
	}
	// An open file's last version stays in force while it is rewritten.
	states["a.yaml"] = writeClosed
	if got := scan(t, s); fmt.Sprint(got) != "[added a (a.yaml)]" {
		t.Fatalf("after its writer closed it: %v", got)
	}
	write(t, dir, "a.yaml", podYAML("a", "j"))
	states["a.yaml"] = writeOpen
	now = now.Add(1999 * time.Millisecond)
	if got := scan(t, s); len(got) != 0 {
		t.Fatalf("rewritten, still open: %v, want a's last version kept", got)
	}
	if !s.Owns("default", "a") {
		t.Fatal("a is no longer desired while its file is rewritten")
	}
	// A writer that keeps it open for WriterWait: the file is read as it is.
	now = now.Add(2 * time.Second)
	d, wait, err = s.scan(true)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(render(d)); got != "[updated a (a.yaml)]" || wait.writing != 0 {
		t.Fatalf("after WriterWait: %v, %d writing; want a updated, none waited for", got, wait.writing)
	}
}

// Where the kernel cannot say whether a writer is done, the scan after a
// notification leaves a changed file alone, and the one after the settle
// reads it.
func TestScanAfterANotificationLeavesFilesItCannotVouchFor(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "i"))
	s := NewSource(Options{Dir: dir})
	fakeWriters(s, map[string]writeState{"a.yaml": writeUnknown})
	if got := scan(t, s); fmt.Sprint(got) != "[added a (a.yaml)]" {
		t.Fatalf("first scan: %v", got)
	}
	write(t, dir, "a.yaml", podYAML("a", "j"))
	write(t, dir, "b.yaml", podYAML("b", "i"))
	d, wait, err := s.scan(true)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(render(d)); got != "[added b (b.yaml)]" || wait.unsure != 1 {
		t.Fatalf("whole-only scan: %v, %d unsure; want b only and a left", got, wait.unsure)
	}
	if got := scan(t, s); fmt.Sprint(got) != "[updated a (a.yaml)]" {
		t.Fatalf("scan after the settle: %v", got)
	}
	// Unchanged, it is no reason to wait.
	if _, wait, _ := s.scan(true); wait.unsure != 0 {
		t.Errorf("unchanged file counted as unsure: %+v", wait)
	}
}

// Run falls back to the settle for such files: the notification's scan
// leaves the file, and once notifications stop for Settle it is read.
func TestSourceRunSettlesForFilesItCannotVouchFor(t *testing.T) {
	dir := t.TempDir()
	s := NewSource(Options{Dir: dir, Interval: time.Hour, Settle: 20 * time.Millisecond,
		NewTicker: func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }})
	fakeWriters(s, map[string]writeState{"a.yaml": writeUnknown})
	diffs := runSource(t, s)
	time.Sleep(50 * time.Millisecond) // let the first scan of the empty dir pass; a late one finds a.yaml just the same
	write(t, dir, "a.yaml", podYAML("a", "i"))
	select {
	case got := <-diffs:
		if fmt.Sprint(got) != "[added a (a.yaml)]" {
			t.Fatalf("diff = %v", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a file the kernel cannot vouch for was never read")
	}
}

// a static pod cannot have ephemeral containers, as the kubelet's
// file source refuses them at creation.
func TestSourceRefusesEphemeralContainers(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "debug.yaml", podYAML("x", "i")+"  ephemeralContainers: [{name: d, image: i}]\n")
	d, err := NewSource(Options{Dir: dir}).Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Errors) != 1 || len(d.Changes) != 0 || !strings.Contains(d.Errors[0].Err.Error(), "spec.ephemeralContainers: cannot be set on create") {
		t.Errorf("diff = %v", render(d))
	}
}

// TestSourceRefusesAPIReferencesWhenAsked: with RefuseAPIReferences (a
// node joined to a cluster), a static pod that refers to an API object is
// refused with the kubelet's message naming the first kind it refers to
// one that does not, or any pod of a standalone source, runs.
func TestSourceRefusesAPIReferencesWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"none", "  volumes: [{name: v, emptyDir: {}}]\n", ""},
		{"host path and downward API", "  volumes: [{name: v, hostPath: {path: /tmp}}, {name: d, projected: {sources: [{downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}]}}]\n", ""},
		{"service account", "  serviceAccountName: builder\n", "serviceaccounts"},
		{"configMap volume", "  volumes: [{name: v, configMap: {name: cfg}}]\n", "configmaps"},
		{"secret volume", "  volumes: [{name: v, secret: {secretName: tls}}]\n", "secrets"},
		{"secret in env", "  containers: [{name: c, image: i, env: [{name: P, valueFrom: {secretKeyRef: {name: db, key: pw}}}]}]\n", "secrets"},
		{"configMap in envFrom", "  containers: [{name: c, image: i, envFrom: [{configMapRef: {name: cfg}}]}]\n", "configmaps"},
		{"configMap in a projected volume", "  volumes: [{name: t, projected: {sources: [{configMap: {name: cfg}}]}}]\n", "configmaps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + tc.spec
			if !strings.Contains(tc.spec, "containers:") {
				doc += "  containers: [{name: c, image: i}]\n"
			}
			for _, refuse := range []bool{false, true} {
				dir := t.TempDir()
				write(t, dir, "p.yaml", doc)
				d, err := NewSource(Options{Dir: dir, RefuseAPIReferences: refuse}).Scan()
				if err != nil {
					t.Fatal(err)
				}
				if !refuse || tc.want == "" {
					if len(d.Errors) != 0 || len(d.Changes) != 1 {
						t.Errorf("refuse=%v: added %d, errors %v; want the pod", refuse, len(d.Changes), d.Errors)
					}
					continue
				}
				want := "spec: static pods may not reference " + tc.want + " (pod p)"
				if len(d.Changes) != 0 || len(d.Errors) != 1 || d.Errors[0].Err.Error() != want {
					t.Errorf("added %d, errors %v; want %q", len(d.Changes), d.Errors, want)
				}
			}
		})
	}
}
