package node

import (
	"testing"
	"time"
)

// The renewals are spread as the kubelet's lease controller spreads them:
// each wait is the interval plus up to 4 % of it, drawn anew; a failed
// renewal is retried within a second.
func TestLeaseWaitJittersAsTheKubeletDoes(t *testing.T) {
	const interval = 10 * time.Second
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := leaseWait(interval, false)
		if d < interval || d > interval+interval*4/100 {
			t.Fatalf("wait %v outside [%v, %v]", d, interval, interval+interval*4/100)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Errorf("1000 waits took only %d values: not jittered", len(seen))
	}
	if d := leaseWait(interval, true); d != time.Second {
		t.Errorf("wait after a failure %v, want 1s", d)
	}
	if d := leaseWait(200*time.Millisecond, true); d != 200*time.Millisecond {
		t.Errorf("wait after a failure with a 200ms interval %v, want 200ms", d)
	}
}
