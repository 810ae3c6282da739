package evented

import (
	"testing"
	"time"
)

// TestStreamRetryDelay: the first MaxFailures-1 failures in a row retry
// after RetryDelay; from the MaxFailures-th on the delay doubles from
// Backoff, capped at BackoffMax (R-13.1: where the kubelet gives evented
// mode up for good).
func TestStreamRetryDelay(t *testing.T) {
	s := &Stream{MaxFailures: 3, RetryDelay: time.Second, Backoff: 10 * time.Second, BackoffMax: 30 * time.Second}
	for failures, want := range map[int]time.Duration{
		1: time.Second, 2: time.Second, 3: 10 * time.Second, 4: 20 * time.Second, 5: 30 * time.Second, 50: 30 * time.Second,
	} {
		if got := s.retryDelay(failures); got != want {
			t.Errorf("retryDelay(%d) = %s, want %s", failures, got, want)
		}
	}
}
