package server

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// auditWindow is how long repeats of one caller's calls of one method are
// counted before they are written as one line.
const auditWindow = time.Minute

// auditTrail writes the audit lines at info: a caller's first call of a
// method at once, with its identity, verb and method; the same caller's
// further calls of that method within the window are counted and written
// as one line, with the count, when the window ends. A node's own sync
// loop and prober call the executor for every pod sync and exec probe:
// one line for each would bury the calls a person made.
type auditTrail struct {
	logger *slog.Logger
	window time.Duration

	mu   sync.Mutex
	open map[auditKey]*auditCount
}

type auditKey struct {
	who, verb, method string
}

type auditCount struct {
	since   time.Time
	repeats int
}

func newAuditTrail(logger *slog.Logger, window time.Duration) *auditTrail {
	return &auditTrail{logger: logger, window: window, open: map[auditKey]*auditCount{}}
}

// record notes one call at now.
func (a *auditTrail) record(ctx context.Context, now time.Time, who string, verb Verb, method string) {
	k := auditKey{who: who, verb: string(verb), method: method}
	a.mu.Lock()
	c, ok := a.open[k]
	if ok && now.Sub(c.since) < a.window {
		c.repeats++
		a.mu.Unlock()
		return
	}
	var closed int
	if ok {
		closed = c.repeats
	}
	a.open[k] = &auditCount{since: now}
	a.mu.Unlock()
	if closed > 0 {
		a.writeRepeats(ctx, k, closed, c.since)
	}
	a.logger.InfoContext(ctx, "audit", "identity", who, "verb", string(verb), "method", method)
}

// flush writes the counts of the windows that ended by now (all of them
// when final) and forgets them.
func (a *auditTrail) flush(now time.Time, final bool) {
	type done struct {
		k auditKey
		c auditCount
	}
	var out []done
	a.mu.Lock()
	for k, c := range a.open {
		if final || now.Sub(c.since) >= a.window {
			if c.repeats > 0 {
				out = append(out, done{k, *c})
			}
			delete(a.open, k)
		}
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].c.since.Before(out[j].c.since) })
	for _, d := range out {
		a.writeRepeats(context.Background(), d.k, d.c.repeats, d.c.since)
	}
}

func (a *auditTrail) writeRepeats(ctx context.Context, k auditKey, n int, since time.Time) {
	a.logger.InfoContext(ctx, "audit", "identity", k.who, "verb", k.verb, "method", k.method,
		"repeats", n, "since", since.UTC().Format(time.RFC3339))
}
