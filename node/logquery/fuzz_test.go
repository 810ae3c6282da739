package logquery

import (
	"net/url"
	"testing"
	"time"
)

// FuzzParseLogQuery: any query of a /containerLogs request is parsed or
// refused, never a panic; what is accepted is in range.
func FuzzParseLogQuery(f *testing.F) {
	for _, s := range []string{"", "follow=true&tailLines=10", "limitBytes=0", "sinceSeconds=5&sinceTime=x",
		"sinceTime=2026-01-02T03:04:05Z&stream=Stderr", "tailLines=-1&previous=maybe", "limitBytes=99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := Parse(q, now)
		if err != nil {
			return
		}
		if lq.TailLines != nil && *lq.TailLines < 0 {
			t.Errorf("%q: tailLines %d accepted", raw, *lq.TailLines)
		}
		if lq.LimitBytes < 0 {
			t.Errorf("%q: limitBytes %d accepted", raw, lq.LimitBytes)
		}
		if q.Get("sinceSeconds") != "" && (lq.SinceTime == nil || !lq.SinceTime.Before(now)) {
			t.Errorf("%q: sinceSeconds gave %v, not before now", raw, lq.SinceTime)
		}
	})
}
