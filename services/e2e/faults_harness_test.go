package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/internal/testsummary"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The fault, flood and crash-consistency suite. Every test here prints its
// counts with t.Logf and ends with one "SUMMARY" line. Under `make test`
// the sizes are small enough for the suite to stay within a couple of
// minutes on two cores; `make soak` sets SYNCPOD_SOAK=1 for the full sizes.

// soak reports whether the long sizes are asked for.
func soak() bool {
	v := os.Getenv("SYNCPOD_SOAK")
	return v == "1" || v == "true"
}

// size picks the make-test size or the soak size.
func size(short, long int) int {
	if soak() {
		return long
	}
	return short
}

// summaryf records the final summary line of a test, for the closing
// report of `make test`.
func summaryf(t *testing.T, format string, args ...any) {
	t.Helper()
	testsummary.Record(t, format, args...)
}

// kill ends p with SIGKILL, keeps its log for failure reports, and
// returns it so it can be restarted.
func (n *node) kill(p *proc) {
	n.t.Helper()
	_ = p.signal(n.t, syscall.SIGKILL)
	n.killed = append(n.killed, p)
	name, pid := p.name, p.cmd.Process.Pid
	n.t.Cleanup(func() {
		if n.t.Failed() {
			n.t.Logf("---- log of %s (pid %d, killed with SIGKILL) ----\n%s", name, pid, p.tail(200))
		}
	})
}

// restart starts a binary again with the flags it had.
func (n *node) restart(p *proc) *proc {
	n.t.Helper()
	return startProc(n.t, p.name, p.opts)
}

// killAndRestart ends the named services with SIGKILL, all of them before
// any comes back, then starts them again in dependency order (crisim,
// executor, PLEG, planner). It needs nodeOptions.sockets for the
// executor and the PLEG, whose addresses the planner was given.
func (n *node) killAndRestart(names ...string) {
	n.t.Helper()
	want := map[string]bool{}
	for _, name := range names {
		want[name] = true
	}
	for _, s := range []struct {
		name string
		p    **proc
	}{{"planner", &n.planner}, {"executor", &n.executor}, {"pleg", &n.pleg}, {"crisim", &n.crisim}} {
		if want[s.name] {
			n.kill(*s.p)
		}
	}
	if want["crisim"] {
		n.crisim = n.restart(n.crisim)
	}
	if want["executor"] {
		n.executor = n.restart(n.executor)
	}
	if want["pleg"] {
		n.pleg = n.restart(n.pleg)
	}
	if want["planner"] {
		n.planner = n.restart(n.planner)
	}
}

// plegHealth asks the PLEG's grpc.health.v1 for the server's status ("").
func (n *node) plegHealth() (healthpb.HealthCheckResponse_ServingStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(n.plegConn).Check(ctx, &healthpb.HealthCheckRequest{})
	return resp.GetStatus(), err
}

// hostProc is one container process crisim started, as the host shows it.
type hostProc struct {
	pid, pgid int
	ppid      int    // its parent: crisim, or the shim that started it
	start     uint64 // start time in clock ticks: tells a reused pid apart
	env       map[string]string
}

// String is "pid (pod/container rev)".
func (h hostProc) String() string {
	return fmt.Sprintf("%d (%s/%s rev %s)", h.pid, h.env["POD"], h.env["CTR"], h.env["REV"])
}

// hostProcesses lists the processes whose working directory is crisim's
// (its containers), crisim itself excepted, with their process group and
// environment.
func (n *node) hostProcesses() []hostProc {
	crisim := -1
	if n.crisim != nil && n.crisim.running() {
		crisim = n.crisim.cmd.Process.Pid
	}
	var out []hostProc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == crisim {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err != nil || cwd != n.workDir {
			continue
		}
		h, ok := readHostProc(pid)
		if ok {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// readHostProc reads a process's group, start time and environment.
func readHostProc(pid int) (hostProc, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return hostProc{}, false
	}
	// The fields after the command name (which may hold spaces) start
	// after the last ')': state is field 3, pgrp 5, starttime 22.
	rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(rest) < 20 {
		return hostProc{}, false
	}
	h := hostProc{pid: pid, env: map[string]string{}}
	h.ppid, _ = strconv.Atoi(rest[1])
	h.pgid, _ = strconv.Atoi(rest[2])
	h.start, _ = strconv.ParseUint(rest[19], 10, 64)
	if rest[0] == "Z" {
		return hostProc{}, false // exited, waiting to be reaped
	}
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range bytes.Split(env, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			h.env[k] = v
		}
	}
	return h, true
}

// alive reports whether the very process h (same pid, same start time)
// still exists.
func (h hostProc) alive() bool {
	now, ok := readHostProc(h.pid)
	return ok && now.start == h.start
}

// processTracker remembers every container process seen during a test, so
// that at the end none may be left on the host, whatever became of crisim.
type processTracker struct {
	seen map[int]hostProc
}

func (pt *processTracker) record(ps []hostProc) {
	if pt.seen == nil {
		pt.seen = map[int]hostProc{}
	}
	for _, p := range ps {
		pt.seen[p.pid] = p
		// Its parent (a shim, or crisim) must be gone too; pid 1 adopts
		// the orphans of a dead parent.
		if p.ppid > 1 {
			if parent, ok := readHostProc(p.ppid); ok {
				pt.seen[parent.pid] = parent
			}
		}
	}
}

// checkGone fails the test for every tracked process (by pid and start
// time) or process group still alive, killing it so the host is left
// clean. Call it after the node's shutdown.
func (pt *processTracker) checkGone(t *testing.T) (tracked, left int) {
	t.Helper()
	var alive []string
	for _, p := range pt.seen {
		if p.alive() {
			alive = append(alive, p.String())
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	sort.Strings(alive)
	if len(alive) > 0 {
		t.Errorf("%d container processes left on the host after the node stopped: %s", len(alive), strings.Join(alive, "; "))
	}
	return len(pt.seen), len(alive)
}

// trackProcesses returns a tracker whose check runs at cleanup. Call it
// before startNode: cleanups run last-registered first, so the check then
// runs after the node's ordered shutdown.
func trackProcesses(t *testing.T) *processTracker {
	pt := &processTracker{}
	t.Cleanup(func() {
		tracked, left := pt.checkGone(t)
		t.Logf("container processes tracked: %d; left on the host after the node stopped: %d", tracked, left)
	})
	return pt
}

// scrape reads a /metrics page.
func scrape(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return string(body)
}

// metricSum adds up the samples of a metric whose labels include every
// given `name="value"` pair.
func metricSum(page, name string, labels ...string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric with this prefix
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// runtimeState is what the runtime holds, by pod uid.
type runtimeState struct {
	sandboxes  map[string][]*runtimeapi.PodSandbox // by pod uid
	containers map[string][]*runtimeapi.Container  // by pod uid
}

// runtimeState lists every sandbox and container the runtime holds.
func (n *node) runtimeState() (runtimeState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rs := runtimeState{sandboxes: map[string][]*runtimeapi.PodSandbox{}, containers: map[string][]*runtimeapi.Container{}}
	sbs, err := n.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return rs, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	uidOf := map[string]string{}
	for _, s := range sbs {
		uid := s.GetMetadata().GetUid()
		uidOf[s.GetId()] = uid
		rs.sandboxes[uid] = append(rs.sandboxes[uid], s)
	}
	cs, err := n.cri.ListContainers(ctx, nil)
	if err != nil {
		return rs, fmt.Errorf("CRI ListContainers: %w", err)
	}
	for _, c := range cs {
		uid, ok := uidOf[c.GetPodSandboxId()]
		if !ok {
			uid = "<no sandbox " + c.GetPodSandboxId() + ">"
		}
		rs.containers[uid] = append(rs.containers[uid], c)
	}
	return rs, nil
}

// podSpecRev is the REV env value the suite's pods carry (the revision a
// client applied), or -1.
func podSpecRev(p *syncpodv1.Pod) int {
	for _, c := range p.GetSpec().GetContainers() {
		for _, e := range c.GetEnv() {
			if e.GetName() == "REV" {
				if r, err := strconv.Atoi(e.GetValue()); err == nil {
					return r
				}
			}
		}
	}
	return -1
}

// revPod is a pod of ctrs sleeping containers whose env names the pod, the
// container and the revision, so its processes can be told apart on the
// host and a spec change (a new revision) restarts them.
func revPod(name string, ctrs, rev int) *syncpodv1.Pod {
	var cs []*syncpodv1.Container
	for i := range ctrs {
		c := sleeper("c" + strconv.Itoa(i))
		c.Env = []*syncpodv1.EnvVar{{Name: "POD", Value: name}, {Name: "CTR", Value: c.Name}, {Name: "REV", Value: strconv.Itoa(rev)}}
		cs = append(cs, c)
	}
	return pod(name, cs...)
}

// listRecords lists every pod the planner holds, by name.
func (n *node) listRecords() (map[string]*plannerv1.PodRecord, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := n.pods.ListPods(ctx, &plannerv1.ListPodsRequest{})
	if err != nil {
		return nil, err
	}
	out := map[string]*plannerv1.PodRecord{}
	for _, r := range resp.GetRecords() {
		out[r.GetPod().GetName()] = r
	}
	return out, nil
}
