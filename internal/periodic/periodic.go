// Package periodic runs a function at a fixed period until a context
// ends: the ticker loop the services' background chores share.
package periodic

import (
	"context"
	"time"
)

// Run calls fn every period, the first time one period after the call,
// until ctx ends; it returns then. A call that takes longer than the
// period delays the next one (ticks are dropped, never queued).
func Run(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
