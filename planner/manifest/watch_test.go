package manifest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// runWatched runs a source whose ticker ticks only when the test sends on
// the returned channel, so every diff after the first must have come from a
// file-system notification (or an explicit tick).
func runWatched(t *testing.T, dir string) (diffs <-chan []string, tick chan<- time.Time) {
	t.Helper()
	ticks := make(chan time.Time)
	s := NewSource(Options{Dir: dir, Interval: time.Hour, NewTicker: func(time.Duration) (<-chan time.Time, func()) {
		return ticks, func() {}
	}})
	return runSource(t, s), ticks
}

// runSource runs s until the test ends, handing each diff it applies to
// the returned channel, and checks that Run then ends as cancelled.
func runSource(t *testing.T, s *Source) <-chan []string {
	t.Helper()
	out := make(chan []string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(_ context.Context, d Diff) []Change { out <- render(d); return nil })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run = %v", err)
		}
	})
	return out
}

// next waits for the next diff. The bound only keeps a broken watch from
// hanging the test; it is not a speed goal (make bench measures that).
func next(t *testing.T, diffs <-chan []string) string {
	t.Helper()
	select {
	case d := <-diffs:
		return fmt.Sprint(d)
	case <-time.After(30 * time.Second):
		t.Fatal("no diff within 30 s: the change was not noticed without a tick")
		return ""
	}
}

func TestSourceWatchPicksUpChangesWithoutATick(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "i"))
	diffs, _ := runWatched(t, dir)
	if got := next(t, diffs); got != "[added a (a.yaml)]" {
		t.Fatalf("first diff = %v", got)
	}

	write(t, dir, "b.yaml", podYAML("b", "i"))
	if got := next(t, diffs); got != "[added b (b.yaml)]" {
		t.Errorf("after a new file: %v", got)
	}
	write(t, dir, "b.yaml", podYAML("b", "j"))
	if got := next(t, diffs); got != "[updated b (b.yaml)]" {
		t.Errorf("after a changed file: %v", got)
	}
	// A careful writer: a hidden file renamed into place.
	write(t, dir, ".c.yaml", podYAML("c", "i"))
	if err := os.Rename(filepath.Join(dir, ".c.yaml"), filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := next(t, diffs); got != "[added c (c.yaml)]" {
		t.Errorf("after a rename into place: %v", got)
	}
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := next(t, diffs); got != "[removed a (a.yaml)]" {
		t.Errorf("after a removed file: %v", got)
	}
}

func TestSourceWatchFollowsADirectoryMadeLaterAndMadeAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	diffs, tick := runWatched(t, dir)
	if got := next(t, diffs); got == "[]" {
		t.Fatalf("missing directory: want its error reported, got %v", got)
	}

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tick <- time.Time{} // the periodic scan finds the directory and watches it
	write(t, dir, "a.yaml", podYAML("a", "i"))
	if got := next(t, diffs); got != "[added a (a.yaml)]" {
		t.Fatalf("after the directory appeared: %v", got)
	}
	write(t, dir, "b.yaml", podYAML("b", "i")) // no tick: only the watch can see it
	if got := next(t, diffs); got != "[added b (b.yaml)]" {
		t.Fatalf("second file in the new directory: %v", got)
	}

	// Removed and made again (as a config-management tool may do): the
	// removal is noticed at once, and the new directory is watched from the
	// next tick on.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if got := next(t, diffs); got == "[]" {
		t.Fatalf("removed directory: want a diff or its error, got %v", got)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tick <- time.Time{}
	// Whether the pods of the old directory were reported removed before
	// or with the new file depends on how the notices and the tick
	// interleave; the new file must be seen either way, with no tick.
	write(t, dir, "c.yaml", podYAML("c", "i"))
	for done := false; !done; {
		got := next(t, diffs)
		done = strings.Contains(got, "added c (c.yaml)")
		for _, item := range []string{"removed a (a.yaml)", "removed b (b.yaml)", "added c (c.yaml)", "error manifests"} {
			got = strings.ReplaceAll(got, item, "")
		}
		if strings.Trim(got, "[] ") != "" {
			t.Fatalf("after the directory came back, unexpected %q", got)
		}
	}
}

func TestRelevantEvents(t *testing.T) {
	for _, tc := range []struct {
		ev   fsnotify.Event
		want bool
	}{
		{fsnotify.Event{Name: "/m/pod.yaml", Op: fsnotify.Create}, true},
		{fsnotify.Event{Name: "/m/pod.YML", Op: fsnotify.Write}, true},
		{fsnotify.Event{Name: "/m/pod.json", Op: fsnotify.Remove}, true},
		{fsnotify.Event{Name: "/m/pod.yaml", Op: fsnotify.Rename}, true},
		{fsnotify.Event{Name: "/m/pod.yaml", Op: fsnotify.Chmod}, false},
		{fsnotify.Event{Name: "/m/.pod.yaml", Op: fsnotify.Write}, false},
		{fsnotify.Event{Name: "/m/pod.yaml.swp", Op: fsnotify.Write}, false},
		{fsnotify.Event{Name: "/m/notes.txt", Op: fsnotify.Create}, false},
	} {
		if got := relevant(tc.ev); got != tc.want {
			t.Errorf("relevant(%v) = %v, want %v", tc.ev, got, tc.want)
		}
	}
}

// leasesOrSkip skips a test that needs the kernel's read leases where the
// test's files cannot have them (a file system without leases).
func leasesOrSkip(t *testing.T, dir string) {
	t.Helper()
	probe := filepath.Join(dir, ".lease-probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probe)
	if _, state, err := readManifest(probe, true); err != nil || state != writeClosed {
		t.Skipf("SKIP (loud): no read lease on %s (state %v, err %v): the kernel cannot say whether a writer is done here", dir, state, err)
	}
}

// runWatchedWith runs a source with opts that never ticks.
func runWatchedWith(t *testing.T, opts Options) <-chan []string {
	t.Helper()
	opts.Interval = time.Hour
	opts.NewTicker = func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }
	return runSource(t, NewSource(opts))
}

// A file its writer has closed is read on the notification itself: with an
// hour's settle and no tick, only that can bring the diff.
func TestSourceWatchReadsAClosedFileWithoutSettling(t *testing.T) {
	dir := t.TempDir()
	leasesOrSkip(t, dir)
	diffs := runWatchedWith(t, Options{Dir: dir, Settle: time.Hour})
	write(t, dir, "a.yaml", podYAML("a", "i"))
	if got := next(t, diffs); got != "[added a (a.yaml)]" {
		t.Fatalf("after a closed write: %v", got)
	}
}

// A file some process still has open for writing is not read, however
// long it sits half-written and whatever notifications come; once the
// writer closes it (which sends no notification Run listens to), it is
// read, whole, without a settle.
func TestSourceWatchWaitsForTheWriterToCloseTheFile(t *testing.T) {
	dir := t.TempDir()
	leasesOrSkip(t, dir)
	diffs := runWatchedWith(t, Options{Dir: dir, Settle: time.Hour, WriterWait: time.Hour})
	f, err := os.OpenFile(filepath.Join(dir, "a.yaml"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	whole := podYAML("a", "busybox")
	half := whole[:len(whole)-4] // parses: image "busy"
	if _, err := f.WriteString(half); err != nil {
		t.Fatal(err)
	}
	// Another file written meanwhile is read at once; the open one is not.
	write(t, dir, "b.yaml", podYAML("b", "i"))
	if got := next(t, diffs); got != "[added b (b.yaml)]" {
		t.Fatalf("while a.yaml is open for writing: %v", got)
	}
	// Give the polls time to (wrongly) read the open file; any diff now
	// is one.
	time.Sleep(200 * time.Millisecond)
	select {
	case d := <-diffs:
		t.Fatalf("read while its writer still had it open: %v", d)
	default:
	}
	if _, err := f.WriteString(whole[len(half):]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := next(t, diffs); got != "[added a (a.yaml)]" {
		t.Fatalf("after the writer closed it: %v", got)
	}
	s := NewSource(Options{Dir: dir})
	d, err := s.Scan()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Changes {
		if c.Pod.GetName() == "a" {
			if img := c.Pod.GetSpec().GetContainers()[0].GetImage(); img != "busybox" {
				t.Errorf("a's image = %q, want the whole file's busybox", img)
			}
		}
	}
}
