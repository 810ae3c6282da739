package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// applyAll applies the pods from parallel goroutines and fails the test
// on any error.
func (n *node) applyAll(t *testing.T, parallel int, pods map[string]int, ctrs int) {
	t.Helper()
	names := make(chan string)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := n.pods.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: revPod(name, ctrs, pods[name])})
				cancel()
				if err != nil {
					failed.Add(1)
					t.Errorf("ApplyPod %s: %v", name, err)
				}
			}
		}()
	}
	for name := range pods {
		names <- name
	}
	close(names)
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
}

// deleteAll deletes every pod the planner holds, waits until the planner
// and the runtime hold nothing, and returns that last look.
func (n *node) deleteAll(t *testing.T, parallel int, timeout time.Duration) convergence {
	t.Helper()
	recs, err := n.listRecords()
	if err != nil {
		t.Fatal(err)
	}
	names := make(chan string)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := n.pods.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Namespace: "default", Name: name}})
				cancel()
				if err != nil && status.Code(err) != codes.NotFound {
					t.Errorf("DeletePod %s: %v", name, err)
				}
			}
		}()
	}
	for name := range recs {
		names <- name
	}
	close(names)
	wg.Wait()
	var last convergence
	eventually(t, timeout, "every pod gone from the planner and the runtime", func() (bool, string) {
		last = n.look(nil, 0, false, nil)
		return last.ok(), last.String()
	})
	return last
}

// goroutines reads a service's go_goroutines gauge.
func goroutines(t *testing.T, p *proc) float64 {
	return metricSum(scrape(t, p.metrics), "go_goroutines")
}

// A flood: 100 clients at once, each applying, changing, reading and
// deleting its own pod, a bounded number of calls each, on crisim's
// simulated mode. Every call must be answered (no error, no timeout), the
// node must end as the acknowledgement log says, and once every pod is
// deleted the planner, executor and PLEG must be back near the goroutine
// counts they started with (no leak per client or per pod).
func TestFloodHundredConcurrentClients(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{crisimMode: "simulated"})
	services := []*proc{n.planner, n.executor, n.pleg}
	base := map[string]float64{}
	for _, p := range services {
		base[p.name] = goroutines(t, p)
	}
	clients, ctrs := 100, 1
	c := newChurn(t, n, "flood", clients, ctrs, clients)
	// Each call bounded at 2 min: the point is that every call is
	// answered, not how fast a hundred fsync'd commits queue on a loaded
	// machine's disk.
	c.budget, c.timeout, c.reads = size(8, 200), 2*time.Minute, true
	began := time.Now()
	c.start()
	c.wait()
	t.Logf("%5.1fs %d clients done: %s", time.Since(began).Seconds(), clients, c.counts())
	if c.unknown.Load() != 0 || c.unexpected.Load() != 0 {
		t.Errorf("calls unanswered %d, unexpected answers %d; want none with no fault injected", c.unknown.Load(), c.unexpected.Load())
	}
	lost, _ := c.checkAcks("after the flood")
	want := c.expected()
	eventually(t, 2*converge, "the node agrees with the acknowledgement log", func() (bool, string) {
		last := n.converged(want, ctrs, false, nil)
		return last == "", last
	})
	t.Logf("%5.1fs converged with %d pods running", time.Since(began).Seconds(), len(want))
	n.deleteAll(t, 16, 2*converge)
	t.Logf("%5.1fs every pod deleted", time.Since(began).Seconds())
	leaks := ""
	for _, p := range services {
		// A few goroutines come and go (timers, connections); a leak per
		// client or per pod would be hundreds.
		limit := base[p.name] + 25
		var now float64
		eventually(t, converge, p.name+": goroutines back near the start", func() (bool, string) {
			now = goroutines(t, p)
			return now <= limit, fmt.Sprintf("%v goroutines, started with %v", now, base[p.name])
		})
		leaks += fmt.Sprintf(" %s_goroutines=%v->%v", p.name, base[p.name], now)
	}
	summaryf(t, "clients=%d %s lost=%d%s", clients, c.counts(), lost, leaks)
}

// A flood of wide pods: 30 pods of 64 containers applied at once,
// the PLEG in evented mode on crisim's simulated mode. The PLEG must not
// serve stale status as fresh: the planner must never create a container
// that already exists, so crisim answers no CreateContainer with
// AlreadyExists, and every pod ends Running with one instance of each
// container.
func TestFloodWidePodsEventedNoAlreadyExists(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{crisimMode: "simulated", plegArgs: []string{"--evented=on"}})
	pods, ctrs := 30, 64
	want := map[string]int{}
	for i := range pods {
		want["wide-"+strconv.Itoa(i)] = 1
	}
	began := time.Now()
	n.applyAll(t, pods, want, ctrs)
	var cv convergence
	ok, last := poll(3*converge, func() (bool, string) {
		cv = n.look(want, ctrs, false, nil)
		return cv.ok(), cv.String()
	})
	t.Logf("%5.1fs %d pods x %d containers: converged=%v", time.Since(began).Seconds(), pods, ctrs, ok)
	page := scrape(t, n.crisim.metrics)
	created := metricSum(page, "syncpod_crisim_operations_total", `operation="CreateContainer"`, `code="OK"`)
	exists := metricSum(page, "syncpod_crisim_operations_total", `operation="CreateContainer"`, `code="AlreadyExists"`)
	t.Logf("crisim CreateContainer: %v OK, %v AlreadyExists", created, exists)
	if !ok {
		t.Errorf("every wide pod running once: not within %s; last seen: %s", 3*converge, last)
	}
	if exists != 0 {
		t.Errorf("crisim answered %v CreateContainer calls with AlreadyExists (containers created twice from stale status), want 0", exists)
	}
	if created < float64(pods*ctrs) {
		t.Errorf("crisim created %v containers, want at least %d", created, pods*ctrs)
	}
	summaryf(t, "pods=%d containers=%d created=%v already_exists=%v lost=%d", pods, pods*ctrs, created, exists, cv.missing)
}

// A flood of pods: a node of 2,000 pods (300 under make test) on
// crisim's simulated mode converges: every pod Running with one READY
// sandbox and one running container, then all deleted, nothing left.
func TestFloodNodeOfManyPodsConverges(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{crisimMode: "simulated"})
	pods := size(300, 2000)
	want := map[string]int{}
	for i := range pods {
		want["many-"+strconv.Itoa(i)] = 1
	}
	began := time.Now()
	n.applyAll(t, 16, want, 1)
	applied := time.Since(began)
	var up convergence
	eventually(t, 4*converge, "every pod running", func() (bool, string) {
		up = n.look(want, 1, false, nil)
		return up.ok(), up.String()
	})
	running := time.Since(began)
	gone := n.deleteAll(t, 16, 4*converge)
	t.Logf("applied in %.1fs, all running after %.1fs, all deleted after %.1fs", applied.Seconds(), running.Seconds(), time.Since(began).Seconds())
	summaryf(t, "pods=%d converged_s=%.1f removed_s=%.1f lost=%d orphans=%d", pods, running.Seconds(), time.Since(began).Seconds(), up.missing, gone.orphans)
}
