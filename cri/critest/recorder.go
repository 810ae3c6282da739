package critest

import (
	"context"
	"slices"
	"sync"
)

// recorder is the one record of the calls made on a Runtime or on
// Images, and the errors injected to answer them.
type recorder struct {
	mu     sync.Mutex
	called []string
	counts map[string]int // of called, by method
	errs   map[string][]error
}

func newRecorder() recorder {
	return recorder{counts: map[string]int{}, errs: map[string][]error{}}
}

// call records a call of method and returns the error injected for it,
// if any (each injected error answers one call).
func (r *recorder) call(method string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.called = append(r.called, method)
	r.counts[method]++
	if errs := r.errs[method]; len(errs) > 0 {
		r.errs[method] = errs[1:]
		return errs[0]
	}
	return nil
}

// do records a call of method and answers the error injected for it, or
// else what crisim's service f answers to req.
func do[Req, Resp any](ctx context.Context, r *recorder, method string, f func(context.Context, Req) (Resp, error), req Req) (Resp, error) {
	if err := r.call(method); err != nil {
		var none Resp
		return none, err
	}
	return f(ctx, req)
}

// InjectError makes the next call of method answer err (several
// injections answer as many calls, in order).
func (r *recorder) InjectError(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[method] = append(r.errs[method], err)
}

// GetCalls returns the names of the methods called, in call order.
func (r *recorder) GetCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.called)
}

// Calls returns how many times method was called (GetCalls, counted).
func (r *recorder) Calls(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[method]
}
