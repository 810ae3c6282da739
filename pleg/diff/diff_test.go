package diff

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

func short(t plegv1.PodLifecycleEventType) string {
	return strings.TrimPrefix(t.String(), "POD_LIFECYCLE_EVENT_TYPE_")
}

func render(events []Event) string {
	var b strings.Builder
	sent := Sendable(events)
	for _, e := range events {
		note := ""
		if e.Type == plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_CHANGED {
			note = " (computed, not sent)"
		}
		fmt.Fprintf(&b, "  %s %s%s\n", short(e.Type), e.ContainerID, note)
	}
	if len(events) == 0 {
		b.WriteString("  (no events)\n")
	}
	fmt.Fprintf(&b, "  sent: %d\n", len(sent))
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -rewrite updates it)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// TestTableGolden renders the whole table into a golden file, so a
// reviewer can read the table as the code computes it.
func TestTableGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString("# R-13.3 state table as computed by diff.Compute (old -> new).\n")
	for _, o := range States {
		for _, n := range States {
			fmt.Fprintf(&b, "%s -> %s\n", o, n)
			b.WriteString(render(Compute("p", rec(o), rec(n))))
		}
	}
	golden(t, "table.golden", b.String())
}

func rec(s State) *Record {
	if s == NonExistent {
		return nil
	}
	return &Record{UID: "p", Entries: []Entry{{ID: "c1", State: s}}}
}

// TestTableExhaustive checks every one of the 4x4 state pairs against the
// table of, written out independently of the implementation.
func TestTableExhaustive(t *testing.T) {
	const (
		S = plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED
		D = plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED
		R = plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED
		C = plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_CHANGED
	)
	type T = []plegv1.PodLifecycleEventType
	want := map[[2]State]T{
		{NonExistent, Running}: {S}, {NonExistent, Exited}: {D}, {NonExistent, Unknown}: {C}, {NonExistent, NonExistent}: nil,
		{Running, Running}: nil, {Running, Exited}: {D}, {Running, Unknown}: {C}, {Running, NonExistent}: {D, R},
		{Exited, Running}: {S}, {Exited, Exited}: nil, {Exited, Unknown}: {C}, {Exited, NonExistent}: {R},
		{Unknown, Running}: {S}, {Unknown, Exited}: {D}, {Unknown, Unknown}: nil, {Unknown, NonExistent}: {D, R},
	}
	if len(want) != len(States)*len(States) {
		t.Fatalf("table has %d cells, want %d", len(want), len(States)*len(States))
	}
	for _, o := range States {
		for _, n := range States {
			t.Run(fmt.Sprintf("R-13.3/%s->%s", o, n), func(t *testing.T) {
				for _, sandbox := range []bool{false, true} {
					var old, cur *Record
					if o != NonExistent {
						old = &Record{UID: "p", Entries: []Entry{{ID: "x", State: o, Sandbox: sandbox}}}
					}
					if n != NonExistent {
						cur = &Record{UID: "p", Entries: []Entry{{ID: "x", State: n, Sandbox: sandbox}}}
					}
					got := Compute("p", old, cur)
					w := want[[2]State{o, n}]
					if len(got) != len(w) {
						t.Fatalf("sandbox=%v: got %v, want %v", sandbox, got, w)
					}
					for i := range w {
						if got[i].Type != w[i] || got[i].ContainerID != "x" || got[i].PodUID != "p" {
							t.Errorf("sandbox=%v: event %d = %+v, want %s on x", sandbox, i, got[i], w[i])
						}
					}
					for _, e := range Sendable(got) {
						if e.Type == C {
							t.Errorf("Sendable kept CONTAINER_CHANGED")
						}
					}
				}
			})
		}
	}
}

// TestSequencesGolden replays the scripts in testdata/*.seq: each line
// "snap <label>: id=state ..." is one listing of a pod (an empty list means
// the pod is gone; ids starting with "sb" are sandboxes); the golden file
// holds the events computed against the previous listing.
func TestSequencesGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.seq"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sequence files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			var out strings.Builder
			var prev *Record
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" || strings.HasPrefix(line, "#") {
					out.WriteString(line + "\n")
					continue
				}
				label, rest, ok := strings.Cut(strings.TrimPrefix(line, "snap "), ":")
				if !ok || !strings.HasPrefix(line, "snap ") {
					t.Fatalf("bad line %q", line)
				}
				var cur *Record
				for _, f := range strings.Fields(rest) {
					id, st, ok := strings.Cut(f, "=")
					s, ok2 := ParseState(st)
					if !ok || !ok2 {
						t.Fatalf("bad entry %q", f)
					}
					if cur == nil {
						cur = &Record{UID: "p"}
					}
					cur.Entries = append(cur.Entries, Entry{ID: id, State: s, Sandbox: strings.HasPrefix(id, "sb")})
				}
				fmt.Fprintf(&out, "snap %s:%s\n", label, rest)
				out.WriteString(render(Compute("p", prev, cur)))
				prev = cur
			}
			golden(t, strings.TrimSuffix(filepath.Base(f), ".seq")+".golden", out.String())
		})
	}
}

// TestComputeDoesNotMutate checks Compute leaves its arguments alone.
func TestComputeDoesNotMutate(t *testing.T) {
	old := &Record{UID: "p", Entries: []Entry{{ID: "b", State: Running}, {ID: "a", State: Exited}}}
	cur := &Record{UID: "p", Entries: []Entry{{ID: "c", State: Running}}}
	Compute("p", old, cur)
	if old.Entries[0].ID != "b" || len(cur.Entries) != 1 {
		t.Fatalf("arguments changed: %+v %+v", old, cur)
	}
}
