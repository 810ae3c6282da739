package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ack is one line of the churn client's acknowledgement log: an ApplyPod
// or DeletePod the planner answered.
type ack struct {
	Seq  int64  `json:"seq"`
	Op   string `json:"op"` // apply or delete
	Name string `json:"name"`
	Rev  int    `json:"rev,omitempty"`
	// Outcome: "ack" (OK), "refused" (a definite no: the pod is
	// terminating) or "gone" (delete of a pod already gone).
	Outcome string    `json:"outcome"`
	At      time.Time `json:"at"`
}

// churnPod is the client's view of one pod name. Each name belongs to one
// worker, so its operations are serialised and the last definite answer
// is what the node must end up with.
type churnPod struct {
	name    string
	present bool // last definite answer: applied (true) or deleted (false)
	rev     int  // revision of the last acknowledged apply
	next    int  // next revision to apply
	// pending is an operation whose answer was lost (the planner died or
	// timed out): it may or may not have happened, and is retried until a
	// definite answer.
	pending string
	applied bool // ever acknowledged as applied
}

// churn is a client that applies, changes and deletes pods continuously
// and logs every acknowledged call.
type churn struct {
	t       *testing.T
	n       *node
	ctrs    int
	pods    []*churnPod
	workers int

	pause sync.RWMutex // workers hold it shared per call; checks take it exclusively
	stopc chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	log     []ack
	logFile *os.File
	seq     atomic.Int64

	// budget bounds each worker's steps (0: until stop); timeout bounds
	// each call (0: 5 s); reads adds a GetPod and, now and then, a ListPods
	// to every step.
	budget  int
	timeout time.Duration
	reads   bool
	// build makes the pod of a revision (nil: revPod).
	build func(name string, ctrs, rev int) *syncpodv1.Pod

	requests, acks, refused, unknown, unexpected, readCalls atomic.Int64
}

// newChurn makes a client for pods named <prefix>-0 .. <prefix>-(count-1)
// with ctrs containers each, spread over workers goroutines. Its log is
// written to ack.log in the test's temporary directory.
func newChurn(t *testing.T, n *node, prefix string, count, ctrs, workers int) *churn {
	f, err := os.Create(filepath.Join(t.TempDir(), "ack.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	c := &churn{t: t, n: n, ctrs: ctrs, workers: workers, stopc: make(chan struct{}), logFile: f}
	for i := range count {
		c.pods = append(c.pods, &churnPod{name: prefix + "-" + strconv.Itoa(i), next: 1})
	}
	return c
}

// start runs the workers until stop.
func (c *churn) start() {
	for w := range c.workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 10))
			var mine []*churnPod
			for i := w; i < len(c.pods); i += c.workers {
				mine = append(mine, c.pods[i])
			}
			if len(mine) == 0 {
				return
			}
			for i := 0; c.budget == 0 || i < c.budget; i++ {
				select {
				case <-c.stopc:
					return
				default:
				}
				p := mine[rng.IntN(len(mine))]
				c.pause.RLock()
				refusedBefore := c.refused.Load()
				ok := c.step(p, rng)
				if c.reads {
					c.read(p, rng)
				}
				c.pause.RUnlock()
				pace := 20 + rng.IntN(60)
				if !ok || c.refused.Load() != refusedBefore {
					// The planner is away, or the pod is still
					// terminating: do not spin on it.
					pace = 250
				}
				select {
				case <-c.stopc:
					return
				case <-time.After(time.Duration(pace) * time.Millisecond):
				}
			}
		}()
	}
}

// stop ends the workers.
func (c *churn) stop() {
	close(c.stopc)
	c.wg.Wait()
}

// wait waits for workers with a budget to finish it.
func (c *churn) wait() { c.wg.Wait() }

// read makes the read calls of a step: GetPod of p (OK or NotFound) and,
// one step in ten, ListPods.
func (c *churn) read(p *churnPod, rng *rand.Rand) {
	ctx, cancel := context.WithTimeout(context.Background(), c.callTimeout())
	defer cancel()
	c.readCalls.Add(1)
	_, err := c.n.pods.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Namespace: "default", Name: p.name}})
	if code := status.Code(err); code != codes.OK && code != codes.NotFound {
		c.unexpected.Add(1)
		c.t.Errorf("GetPod %s: %v", p.name, err)
	}
	if rng.IntN(10) == 0 {
		c.readCalls.Add(1)
		if _, err := c.n.pods.ListPods(ctx, &plannerv1.ListPodsRequest{}); err != nil {
			c.unexpected.Add(1)
			c.t.Errorf("ListPods: %v", err)
		}
	}
}

func (c *churn) callTimeout() time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	return 5 * time.Second
}

// step makes one call for p: retries its pending call, or applies a new
// revision (create or change), or deletes it. It reports false when the
// answer was lost.
func (c *churn) step(p *churnPod, rng *rand.Rand) bool {
	op := p.pending
	if op == "" {
		op = "apply"
		if p.present && rng.IntN(3) == 0 {
			op = "delete"
		}
	}
	return c.call(p, op)
}

// call makes one ApplyPod or DeletePod for p and updates its view.
func (c *churn) call(p *churnPod, op string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.callTimeout())
	defer cancel()
	c.requests.Add(1)
	var err error
	rev := p.next
	if op == "apply" {
		build := c.build
		if build == nil {
			build = revPod
		}
		_, err = c.n.pods.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: build(p.name, c.ctrs, rev)})
	} else {
		_, err = c.n.pods.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Namespace: "default", Name: p.name}})
	}
	switch code := status.Code(err); {
	case code == codes.OK:
		p.pending = ""
		if op == "apply" {
			p.present, p.rev, p.applied = true, rev, true
			p.next++
		} else {
			p.present = false
		}
		c.acks.Add(1)
		c.record(ack{Op: op, Name: p.name, Rev: rev, Outcome: "ack"})
		return true
	case op == "apply" && code == codes.FailedPrecondition:
		// Still terminating from an acknowledged delete: a definite no.
		p.pending = ""
		c.refused.Add(1)
		c.record(ack{Op: op, Name: p.name, Rev: rev, Outcome: "refused"})
		return true
	case op == "delete" && code == codes.NotFound:
		p.pending, p.present = "", false
		c.refused.Add(1)
		c.record(ack{Op: op, Name: p.name, Outcome: "gone"})
		return true
	case code == codes.Unavailable || code == codes.DeadlineExceeded || code == codes.Canceled:
		// The answer is lost: the call may have taken effect or not.
		p.pending = op
		c.unknown.Add(1)
		return false
	default:
		c.unexpected.Add(1)
		c.t.Errorf("%s %s rev %d: unexpected answer %v", op, p.name, rev, err)
		p.pending = ""
		return false
	}
}

func (c *churn) record(a ack) {
	a.Seq = c.seq.Add(1)
	a.At = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, a)
	if b, err := json.Marshal(a); err == nil {
		_, _ = c.logFile.Write(append(b, '\n'))
	}
}

// settle resolves every pending call by retrying it until the planner
// answers it definitely. The workers must be stopped.
func (c *churn) settle() {
	c.t.Helper()
	deadline := time.Now().Add(converge)
	for _, p := range c.pods {
		for p.pending != "" {
			if time.Now().After(deadline) {
				c.t.Fatalf("%s: pending %s never answered", p.name, p.pending)
			}
			if !c.call(p, p.pending) {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}

// checkAcks compares the planner's store with the acknowledgement log,
// with the workers paused: every pod whose last answer was an applied
// revision is stored with that revision and not terminating; every pod
// whose last answer was a delete is gone or terminating. A pod with a
// call in doubt (its answer lost to the kill) may show the state before
// that call or after it, nothing else. It returns the number of lost
// acknowledgements (each also a test error) and of pods checked.
func (c *churn) checkAcks(when string) (lost, checked int) {
	c.t.Helper()
	c.pause.Lock()
	defer c.pause.Unlock()
	var recs map[string]*plannerv1.PodRecord
	eventually(c.t, converge, "the planner answers ListPods "+when, func() (bool, string) {
		r, err := c.n.listRecords()
		recs = r
		return err == nil, fmt.Sprint(err)
	})
	for _, p := range c.pods {
		checked++
		r := recs[p.name]
		live := r != nil && r.GetPod().GetDeletionTime() == nil
		var ok bool
		var want string
		switch {
		case p.present:
			ok, want = live && podSpecRev(r.GetPod()) == p.rev, fmt.Sprintf("rev %d live", p.rev)
		default:
			ok, want = !live, "gone or terminating"
		}
		if !ok && p.pending == "apply" {
			ok = live && podSpecRev(r.GetPod()) == p.next
			want += fmt.Sprintf(", or rev %d live (apply in doubt)", p.next)
		}
		if !ok && p.pending == "delete" {
			ok = !live
			want += ", or gone or terminating (delete in doubt)"
		}
		if ok {
			continue
		}
		lost++
		got := "nothing"
		if r != nil {
			got = fmt.Sprintf("rev %d, terminating=%v", podSpecRev(r.GetPod()), !live)
		}
		c.t.Errorf("LOST ACK %s: %s: the log wants %s; the planner holds %s", when, p.name, want, got)
	}
	return lost, checked
}

// expected is the final state the log asks for: the revision of every pod
// that must run, by name.
func (c *churn) expected() map[string]int {
	out := map[string]int{}
	for _, p := range c.pods {
		if p.present {
			out[p.name] = p.rev
		}
	}
	return out
}

// counts is a one-line account of the client's calls.
func (c *churn) counts() string {
	return fmt.Sprintf("requests=%d acks=%d refused=%d unanswered=%d unexpected=%d reads=%d",
		c.requests.Load(), c.acks.Load(), c.refused.Load(), c.unknown.Load(), c.unexpected.Load(), c.readCalls.Load())
}

// convergence is one look at the node against what it must run: what is
// wrong, and the counts a test's summary reports. A count is -1 when the
// look could not be made (the planner or the runtime did not answer).
type convergence struct {
	problems   []string
	missing    int // pods that must run and the planner does not hold
	duplicates int // READY sandboxes, running instances and host processes beyond one, each where seen
	orphans    int // sandboxes, containers and host processes of no pod that must run
}

// ok reports whether everything holds.
func (cv convergence) ok() bool { return len(cv.problems) == 0 }

// String is "" when everything holds, or what is wrong (at most 12
// problems).
func (cv convergence) String() string {
	bad := slices.Clone(cv.problems)
	sort.Strings(bad)
	if len(bad) > 12 {
		bad = append(bad[:12], fmt.Sprintf("... and %d more", len(bad)-12))
	}
	return strings.Join(bad, "; ")
}

// unanswered is a look that could not be made.
func unanswered(problem string) convergence {
	return convergence{problems: []string{problem}, missing: -1, duplicates: -1, orphans: -1}
}

// converged checks the node against want (pod name -> revision, each pod
// with ctrs containers), in the planner, in the runtime and, when procs
// is true, on the host. It returns "" when everything holds, or what is
// wrong.
func (n *node) converged(want map[string]int, ctrs int, procs bool, extra map[string]int) string {
	return n.look(want, ctrs, procs, extra).String()
}

// look is converged with its counts.
func (n *node) look(want map[string]int, ctrs int, procs bool, extra map[string]int) convergence {
	all := map[string]int{}
	for k, v := range want {
		all[k] = v
	}
	for k, v := range extra {
		all[k] = v
	}
	recs, err := n.listRecords()
	if err != nil {
		return unanswered("ListPods: " + err.Error())
	}
	var cv convergence
	var bad []string
	uids := map[string]string{} // uid -> name
	for name, rev := range all {
		r := recs[name]
		switch {
		case r == nil:
			bad = append(bad, name+": not in the planner")
			cv.missing++
			continue
		case podSpecRev(r.GetPod()) != rev:
			bad = append(bad, fmt.Sprintf("%s: rev %d in the planner, want %d", name, podSpecRev(r.GetPod()), rev))
		case !allReady(r):
			bad = append(bad, name+": not ready: "+summary(r))
		}
		uids[r.GetPod().GetUid()] = name
	}
	for name := range recs {
		if _, ok := all[name]; !ok {
			bad = append(bad, name+": still in the planner ("+summary(recs[name])+")")
		}
	}
	rs, err := n.runtimeState()
	if err != nil {
		return unanswered(err.Error())
	}
	for uid, sbs := range rs.sandboxes {
		name, ok := uids[uid]
		if !ok {
			bad = append(bad, fmt.Sprintf("ORPHAN: %d sandboxes of uid %s (%s), which no desired pod has", len(sbs), uid, sbs[0].GetMetadata().GetName()))
			cv.orphans += len(sbs)
			continue
		}
		ready := ""
		nReady := 0
		for _, s := range sbs {
			if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				ready = s.GetId()
				nReady++
			}
		}
		if nReady != 1 {
			bad = append(bad, fmt.Sprintf("%s: %d READY sandboxes, want 1", name, nReady))
		}
		cv.duplicates += max(nReady-1, 0)
		running := map[string]int{}
		for _, c := range rs.containers[uid] {
			if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
				continue
			}
			if c.GetPodSandboxId() != ready {
				bad = append(bad, fmt.Sprintf("%s: container %s running outside the ready sandbox", name, c.GetMetadata().GetName()))
			}
			running[c.GetMetadata().GetName()]++
		}
		for i := range ctrs {
			got := running["c"+strconv.Itoa(i)]
			if got != 1 {
				bad = append(bad, fmt.Sprintf("%s: %d running instances of c%d, want 1", name, got, i))
			}
			cv.duplicates += max(got-1, 0)
		}
	}
	for uid := range rs.containers {
		if _, ok := rs.sandboxes[uid]; !ok {
			bad = append(bad, fmt.Sprintf("ORPHAN: %d containers of %s", len(rs.containers[uid]), uid))
			cv.orphans += len(rs.containers[uid])
		}
	}
	for uid, name := range uids {
		if len(rs.sandboxes[uid]) == 0 {
			bad = append(bad, name+": no sandbox in the runtime")
		}
	}
	if procs {
		seen := map[string][]hostProc{}
		for _, h := range n.hostProcesses() {
			key := h.env["POD"] + "/" + h.env["CTR"]
			seen[key] = append(seen[key], h)
		}
		for key, hs := range seen {
			name, ctr, _ := strings.Cut(key, "/")
			rev, ok := all[name]
			if !ok {
				bad = append(bad, fmt.Sprintf("ORPHAN PROCESS: %v of a pod that must not run", hs))
				cv.orphans += len(hs)
				continue
			}
			if len(hs) != 1 {
				bad = append(bad, fmt.Sprintf("DUPLICATE: %d host processes of %s/%s: %v", len(hs), name, ctr, hs))
				cv.duplicates += len(hs) - 1
			} else if hs[0].env["REV"] != strconv.Itoa(rev) {
				bad = append(bad, fmt.Sprintf("%s/%s runs rev %s on the host, want %d", name, ctr, hs[0].env["REV"], rev))
			}
		}
		for name := range all {
			for i := range ctrs {
				if len(seen[name+"/c"+strconv.Itoa(i)]) == 0 {
					bad = append(bad, fmt.Sprintf("%s/c%d: no host process", name, i))
				}
			}
		}
	}
	cv.problems = bad
	return cv
}
