package daemon

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// recorder is a member that notes when it is ready and why it stopped.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// member starts, says it is ready, and runs until its context ends or its
// Term closes; alive reports whether its context is still live at that
// moment (what a node agent's graceful shutdown needs of its planner's).
func (r *recorder) member(name string, alive func() bool) Member {
	return Member{Name: name, Run: func(ctx context.Context, env Env) int {
		r.add(name + " ready")
		env.ReadyNow()
		select {
		case <-ctx.Done():
			r.add(name + " cancelled")
		case <-env.Term:
			if alive != nil && !alive() {
				r.add(name + " term, the stage before already stopped")
			}
			r.add(name + " term")
		}
		return 0
	}}
}

// Stages start in order, each once the one before is ready, and on Term
// stop in the reverse order, each while the ones before it still run.
func TestAGroupStartsInOrderAndStopsInReverse(t *testing.T) {
	var r recorder
	firstLive := make(chan struct{})
	var once sync.Once
	first := Member{Name: "first", Run: func(ctx context.Context, env Env) int {
		r.add("first ready")
		env.ReadyNow()
		select {
		case <-ctx.Done():
		case <-env.Term:
		}
		once.Do(func() { close(firstLive) })
		r.add("first term")
		return 0
	}}
	alive := func() bool {
		select {
		case <-firstLive:
			return false
		default:
			return true
		}
	}
	term := make(chan struct{})
	second := r.member("second", alive)
	run := second.Run
	secondReady := make(chan struct{})
	second.Run = func(ctx context.Context, env Env) int {
		ready := env.Ready
		env.Ready = func() { ready(); close(secondReady) }
		return run(ctx, env)
	}
	done := make(chan struct{})
	var ended bool
	var all []Status
	go func() {
		defer close(done)
		_, ended, all = Group{Stages: [][]Member{{first}, {second}}}.Run(context.Background(), term)
	}()
	select {
	case <-secondReady:
	case <-done:
		t.Fatalf("the group ended before both started: %v", r.events)
	}
	close(term)
	<-done
	want := []string{"first ready", "second ready", "second term", "first term"}
	if !slices.Equal(r.events, want) || ended || len(all) != 2 {
		t.Fatalf("events %v, ended %v, statuses %v; want %v, not ended, 2 statuses", r.events, ended, all, want)
	}
}

// The first member to end on its own stops the others, and the group
// reports it.
func TestAMemberThatEndsStopsTheGroup(t *testing.T) {
	var r recorder
	quits := Member{Name: "quits", Run: func(context.Context, Env) int { return 3 }}
	first, ended, all := Group{Stages: [][]Member{{r.member("runs", nil)}, {quits}}}.Run(context.Background(), nil)
	if !ended || first != (Status{Name: "quits", Code: 3}) {
		t.Fatalf("first %+v, ended %v; want quits with 3", first, ended)
	}
	if !slices.Equal(r.events, []string{"runs ready", "runs cancelled"}) || len(all) != 2 {
		t.Fatalf("events %v, statuses %v", r.events, all)
	}
}
