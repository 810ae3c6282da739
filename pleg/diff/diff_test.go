package diff

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

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
		fmt.Fprintf(&b, "%s %s%s\n", short(e.Type), e.ContainerID, note)
	}
	if len(events) == 0 {
		b.WriteString("(no events)\n")
	}
	fmt.Fprintf(&b, "sent: %d\n", len(sent))
	return b.String()
}

// TestScenarios replays testdata/*.txt with datadriven (go test -rewrite
// rewrites the expected output). Two commands:
//
//	change old=STATE new=STATE   the events of one container going from
//	                             old to new (non-existent is no record)
//	snap LABEL [ID=STATE ...]    the pod's next listing, diffed against the
//	                             previous one in the file; no entries means
//	                             the pod is gone, IDs starting with "sb" are
//	                             sandboxes
//
// testdata/table.txt must hold a change for every pair of the state table
// so a reviewer reads the whole table as the code computes it.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var prev *Record
		table := map[[2]State]bool{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "change":
				var o, n string
				d.ScanArgs(t, "old", &o)
				d.ScanArgs(t, "new", &n)
				old, ok1 := ParseState(o)
				cur, ok2 := ParseState(n)
				if !ok1 || !ok2 {
					d.Fatalf(t, "unknown state in %s", d.FullCmd())
				}
				table[[2]State{old, cur}] = true
				return render(Compute("p", rec(old), rec(cur)))
			case "snap":
				if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) != 0 {
					d.Fatalf(t, "snap LABEL [ID=STATE ...]")
				}
				var cur *Record
				for _, a := range d.CmdArgs[1:] {
					s, ok := ParseState(a.SingleVal(t))
					if !ok {
						d.Fatalf(t, "bad entry %s", a)
					}
					if cur == nil {
						cur = &Record{UID: "p"}
					}
					cur.Entries = append(cur.Entries, Entry{ID: a.Key, State: s, Sandbox: strings.HasPrefix(a.Key, "sb")})
				}
				out := render(Compute("p", prev, cur))
				prev = cur
				return out
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
		if filepath.Base(path) != "table.txt" {
			return
		}
		for _, o := range States {
			for _, n := range States {
				if !table[[2]State{o, n}] {
					t.Errorf("%s has no change old=%s new=%s", path, o, n)
				}
			}
		}
	})
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

// TestComputeDoesNotMutate checks Compute leaves its arguments alone.
func TestComputeDoesNotMutate(t *testing.T) {
	old := &Record{UID: "p", Entries: []Entry{{ID: "b", State: Running}, {ID: "a", State: Exited}}}
	cur := &Record{UID: "p", Entries: []Entry{{ID: "c", State: Running}}}
	Compute("p", old, cur)
	if old.Entries[0].ID != "b" || len(cur.Entries) != 1 {
		t.Fatalf("arguments changed: %+v %+v", old, cur)
	}
}
