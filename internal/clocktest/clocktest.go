package clocktest

import (
	"sync"
	"time"
)

// Start is an instant tests may begin at when the date itself does not
// matter (2023-11-14 22:13:20 UTC).
var Start = time.Unix(1_700_000_000, 0)

// Clock is a clock that moves only when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock standing at now.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (back for a negative d).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to now.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}
