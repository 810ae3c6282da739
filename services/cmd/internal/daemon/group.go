package daemon

import (
	"context"
	"sync"
)

// Member is one service of a Group.
type Member struct {
	// Name names it in the group's errors.
	Name string
	// Run is the service (plannerd.Run, ...).
	Run func(context.Context, Env) int
	// Env is what it runs with; the group sets Ready and Term.
	Env Env
}

// Group runs services in one process in stages: every member of a stage
// starts at once, a stage once every member of the one before listens (or
// has ended), and they stop in the reverse order, a stage once the one
// after it has ended. The first member to end stops the group.
type Group struct {
	// Stages are the members in start order.
	Stages [][]Member
}

// Status is how a member ended.
type Status struct {
	Name string
	Code int
}

type running struct {
	m      Member
	cancel context.CancelFunc
	term   chan struct{}
	ready  chan struct{}
	done   chan struct{}
	code   int
}

// Run starts the group and runs it until ctx ends (every stage then
// stops, the last first, each at once), term closes (each stage's Term
// closes in turn, the last first, so that a node agent can shut its pods
// down through its planner before the planner stops), or a member ends.
// It returns the first member to end on its own, if one did (first is
// then true), and every member's status in start order.
func (g Group) Run(ctx context.Context, term <-chan struct{}) (first Status, ended bool, all []Status) {
	ended1 := make(chan *running, 1)
	var once sync.Once
	stages := make([][]*running, 0, len(g.Stages))
	stopping := make(chan struct{})
	start := func(m Member) *running {
		mctx, cancel := context.WithCancel(context.Background())
		r := &running{m: m, cancel: cancel, term: make(chan struct{}), ready: make(chan struct{}), done: make(chan struct{})}
		var readyOnce sync.Once
		env := m.Env
		env.Ready = func() { readyOnce.Do(func() { close(r.ready) }) }
		env.Term = r.term
		go func() {
			defer close(r.done)
			r.code = m.Run(mctx, env)
			select {
			case <-stopping:
			default:
				once.Do(func() { ended1 <- r })
			}
		}()
		return r
	}
	var why *running
	stopped := false
startAll:
	for _, stage := range g.Stages {
		rs := make([]*running, 0, len(stage))
		for _, m := range stage {
			rs = append(rs, start(m))
		}
		stages = append(stages, rs)
		for _, r := range rs {
			select {
			case <-r.ready:
			case <-r.done:
			case why = <-ended1:
				break startAll
			case <-ctx.Done():
				stopped = true
				break startAll
			case <-term:
				break startAll
			}
		}
	}
	if why == nil && !stopped {
		select {
		case why = <-ended1:
		case <-ctx.Done():
			stopped = true
		case <-term:
		}
	}
	close(stopping)
	// A stage stops once every later one has ended: cancelled at once
	// after ctx ended or a member ended, else through its Term (ctx
	// ending meanwhile cuts that short).
	for i := len(stages) - 1; i >= 0; i-- {
		for _, r := range stages[i] {
			if stopped || why != nil {
				r.cancel()
			} else {
				close(r.term)
			}
		}
		for _, r := range stages[i] {
			select {
			case <-r.done:
			case <-ctx.Done():
				for _, s := range stages[:i+1] {
					for _, r := range s {
						r.cancel()
					}
				}
				<-r.done
			}
		}
	}
	for _, s := range stages {
		for _, r := range s {
			r.cancel()
			all = append(all, Status{Name: r.m.Name, Code: r.code})
		}
	}
	if why != nil {
		return Status{Name: why.m.Name, Code: why.code}, true, all
	}
	return Status{}, false, all
}
