package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunCallsUntilTheContextEnds: fn runs repeatedly at the period, not
// before the first period, and Run returns once ctx ends, after which fn
// is not called again.
func TestRunCallsUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	done := make(chan struct{})
	go func() { Run(ctx, 5*time.Millisecond, func() { calls.Add(1) }); close(done) }()
	if n := calls.Load(); n != 0 {
		t.Fatalf("fn called %d times at once, want none before the first period", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fn called %d times in 10 s at a 5 ms period", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	n := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if m := calls.Load(); m != n {
		t.Errorf("fn called %d more times after Run returned", m-n)
	}
}
