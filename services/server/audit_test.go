package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/internal/proctest"
)

// A caller's repeated calls of one method are one line at once and one
// count when the window ends; another caller, or another method, is a
// line of its own at once; the final flush writes what is still open.
func TestAuditTrailCountsRepeatsPerCallerAndMethod(t *testing.T) {
	var logs proctest.Buffer
	a := newAuditTrail(slog.New(slog.NewTextHandler(&logs, nil)), time.Minute)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	const apply = "/syncpod.executor.v1.ExecutorService/ApplyActions"
	const exec = "/syncpod.planner.v1.PlannerService/Exec"
	for i := range 40 {
		a.record(ctx, t0.Add(time.Duration(i)*time.Second), "CN=node-1,O=syncpod:nodes", VerbWrite, apply)
	}
	a.record(ctx, t0.Add(5*time.Second), "CN=admin,O=syncpod:admins", VerbExec, exec)
	a.record(ctx, t0.Add(6*time.Second), "CN=node-1,O=syncpod:nodes", VerbExec, "/syncpod.executor.v1.ExecutorService/ExecSync")
	lines := func() []string {
		var out []string
		for l := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
			if l != "" {
				out = append(out, l[strings.Index(l, "level="):])
			}
		}
		return out
	}
	want := []string{
		`level=INFO msg=audit identity="CN=node-1,O=syncpod:nodes" verb=write method=` + apply,
		`level=INFO msg=audit identity="CN=admin,O=syncpod:admins" verb=exec method=` + exec,
		`level=INFO msg=audit identity="CN=node-1,O=syncpod:nodes" verb=exec method=/syncpod.executor.v1.ExecutorService/ExecSync`,
	}
	if got := lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("within the window:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Before the window ends nothing more is written.
	a.flush(t0.Add(59*time.Second), false)
	if n := len(lines()); n != 3 {
		t.Fatalf("%d lines after an early flush, want 3", n)
	}
	// When it ends, the 39 repeats are one line; callers without repeats
	// are forgotten without a line.
	a.flush(t0.Add(61*time.Second), false)
	want = append(want, `level=INFO msg=audit identity="CN=node-1,O=syncpod:nodes" verb=write method=`+apply+` repeats=39 since=2026-03-01T10:00:00Z`)
	if got := lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the window:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The admin's window, opened at 10:00:05, is still open: two more
	// calls are counted; a call after it closes the count at once and is
	// a line of its own again.
	a.record(ctx, t0.Add(62*time.Second), "CN=admin,O=syncpod:admins", VerbExec, exec)
	a.record(ctx, t0.Add(63*time.Second), "CN=admin,O=syncpod:admins", VerbExec, exec)
	a.record(ctx, t0.Add(130*time.Second), "CN=admin,O=syncpod:admins", VerbExec, exec)
	want = append(want,
		`level=INFO msg=audit identity="CN=admin,O=syncpod:admins" verb=exec method=`+exec+` repeats=2 since=2026-03-01T10:00:05Z`,
		`level=INFO msg=audit identity="CN=admin,O=syncpod:admins" verb=exec method=`+exec)
	a.record(ctx, t0.Add(131*time.Second), "CN=admin,O=syncpod:admins", VerbExec, exec)
	// The final flush (at shutdown) writes the open count at once.
	a.flush(t0.Add(132*time.Second), true)
	want = append(want, `level=INFO msg=audit identity="CN=admin,O=syncpod:admins" verb=exec method=`+exec+` repeats=1 since=2026-03-01T10:02:10Z`)
	if got := lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("at the end:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
