package node

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
		lq, err := parseLogQuery(q, now)
		if err != nil {
			return
		}
		if lq.req.TailLines != nil && *lq.req.TailLines < 0 {
			t.Errorf("%q: tailLines %d accepted", raw, *lq.req.TailLines)
		}
		if lq.limitBytes < 0 {
			t.Errorf("%q: limitBytes %d accepted", raw, lq.limitBytes)
		}
		if q.Get("sinceSeconds") != "" && !lq.req.GetSinceTime().AsTime().Before(now) {
			t.Errorf("%q: sinceSeconds gave %v, not before now", raw, lq.req.GetSinceTime().AsTime())
		}
	})
}

// FuzzParseThresholds: any --eviction-hard is parsed or refused; what is
// accepted is a positive quantity or a percentage in (0, 1).
func FuzzParseThresholds(f *testing.F) {
	for _, s := range []string{"", "memory.available<100Mi", "nodefs.available<10%,pid.available<1000",
		"imagefs.available<0%", "x<1", "memory.available<", "<<", "nodefs.inodesFree<5.5%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThresholds(s, Thresholds{})
		if err != nil {
			return
		}
		for _, x := range []Threshold{th.MemoryAvailable, th.NodeFsAvailable, th.NodeFsInodesFree, th.ImageFsAvailable, th.ImageFsInodesFree, th.PIDAvailable} {
			if x.Quantity < 0 || x.Percentage < 0 || x.Percentage >= 1 || (x.Quantity > 0 && x.Percentage > 0) {
				t.Errorf("%q: threshold %+v accepted", s, x)
			}
		}
	})
}
