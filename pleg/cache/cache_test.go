package cache

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestGetNewerThan(t *testing.T) {
	pod := &syncpodv1.ObservedPod{Uid: "a", Name: "x"}
	tests := []struct {
		name    string
		setup   func(c *Cache)
		uid     string
		min     time.Time
		want    string // name of the pod returned, "<empty>" for an empty status, "" for no answer
		wantUID string
	}{
		{"R-13.5/never-relisted-waits", func(c *Cache) {}, "a", time.Time{}, "", ""},
		{"R-13.5/entry-newer", func(c *Cache) { c.Set("a", pod, t0.Add(time.Second)) }, "a", t0, "x", "a"},
		{"R-13.5/entry-not-newer-waits", func(c *Cache) { c.Set("a", pod, t0) }, "a", t0, "", ""},
		{"R-13.5/global-newer-returns-old-entry", func(c *Cache) { c.Set("a", pod, t0); c.UpdateTime(t0.Add(time.Second)) }, "a", t0, "x", "a"},
		{"R-13.5/unknown-pod-empty-once-global-newer", func(c *Cache) { c.UpdateTime(t0.Add(time.Second)) }, "b", t0, "<empty>", "b"},
		{"R-13.5/unknown-pod-waits-while-global-old", func(c *Cache) { c.UpdateTime(t0) }, "b", t0, "", ""},
		{"zero-min-any-status-after-first-relist", func(c *Cache) { c.UpdateTime(t0) }, "b", time.Time{}, "<empty>", "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			tc.setup(c)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			got, err := c.GetNewerThan(ctx, tc.uid, tc.min)
			if tc.want == "" {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, %v; want to wait", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name := got.GetName()
			if name == "" {
				name = "<empty>"
			}
			if name != tc.want || got.GetUid() != tc.wantUID {
				t.Fatalf("got %v, want name %s uid %s", got, tc.want, tc.wantUID)
			}
		})
	}
}

// TestGetNewerThanWakesOnSet checks a waiter is woken by the broadcast of a
// later Set, and one with a deadline gives up with DeadlineExceeded.
func TestGetNewerThanWakesOnSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New()
		done := make(chan *syncpodv1.ObservedPod)
		go func() {
			p, err := c.GetNewerThan(context.Background(), "a", t0)
			if err != nil {
				t.Error(err)
			}
			done <- p
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("returned before any status")
		default:
		}
		c.Set("a", &syncpodv1.ObservedPod{Uid: "a"}, t0) // not newer
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("returned a status not newer than asked")
		default:
		}
		c.Set("a", &syncpodv1.ObservedPod{Uid: "a", Name: "new"}, t0.Add(time.Millisecond))
		if p := <-done; p.GetName() != "new" {
			t.Fatalf("got %v", p)
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := c.GetNewerThan(ctx, "b", t0.Add(time.Hour)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func TestSetIfNewer(t *testing.T) {
	c := New()
	if !c.SetIfNewer("a", &syncpodv1.ObservedPod{Name: "1"}, t0) {
		t.Fatal("first set refused")
	}
	if c.SetIfNewer("a", &syncpodv1.ObservedPod{Name: "old"}, t0) {
		t.Fatal("R-14.2: equal time accepted")
	}
	if c.SetIfNewer("a", &syncpodv1.ObservedPod{Name: "older"}, t0.Add(-time.Second)) {
		t.Fatal("R-14.2: older accepted")
	}
	if p, _ := c.Get("a"); p.GetName() != "1" {
		t.Fatalf("cached %v", p)
	}
	if !c.SetIfNewer("a", &syncpodv1.ObservedPod{Name: "2"}, t0.Add(time.Second)) {
		t.Fatal("newer refused")
	}
	if c.DeleteIfOlder("a", t0) {
		t.Fatal("DeleteIfOlder removed an entry newer than its time")
	}
	if !c.DeleteIfOlder("a", t0.Add(time.Second)) || c.Len() != 0 {
		t.Fatal("DeleteIfOlder kept an entry as old as its time")
	}
}

func TestListSortedAndTimestampMonotonic(t *testing.T) {
	c := New()
	c.Set("b", &syncpodv1.ObservedPod{Uid: "b"}, t0)
	c.Set("a", &syncpodv1.ObservedPod{Uid: "a"}, t0)
	c.UpdateTime(t0.Add(time.Second))
	c.UpdateTime(t0)
	pods, ts := c.List()
	if len(pods) != 2 || pods[0].GetUid() != "a" || pods[1].GetUid() != "b" {
		t.Fatalf("list %v", pods)
	}
	if !ts.Equal(t0.Add(time.Second)) {
		t.Fatalf("timestamp went back: %v", ts)
	}
}
