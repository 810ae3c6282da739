package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/syncpod/syncpod/proto/fielderr"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// These tests run whole nodes (crisim in process mode, executor, PLEG,
// planner) as real processes, one node per test, in parallel. Timeouts are
// generous upper bounds for a loaded 2-core machine; only lower bounds are
// asserted on timing.

const converge = 45 * time.Second

const initSidecarPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: init
    image: busybox:1.36
    command: ["sh", "-c", "exit 0"]
  - name: sidecar
    image: busybox:1.36
    restartPolicy: Always
    command: ["sleep", "3600"]
  containers:
  - name: app
    image: busybox:1.36
    command: ["sleep", "3600"]
  - name: helper
    image: busybox:1.36
    command: ["sleep", "3600"]
`

// the init container runs to completion first, then the
// sidecar starts, then both regular containers; the pod is Running with
// every container ready, as syncpodctl shows.
func TestInitContainerSidecarAndContainersReachRunning(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, []byte(initSidecarPod), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := n.ctl("apply", "-f", file); code != 0 {
		t.Fatalf("syncpodctl apply: exit %d: %s %s", code, out, errOut)
	}
	rec := n.waitRunning("web", converge)

	init := cstatus(rec, "init")
	if term := init.GetState().GetTerminated(); term == nil || term.GetExitCode() != 0 || term.GetReason() != "Completed" {
		t.Errorf("init container state = %s, want terminated Completed (0)", stateString(init.GetState()))
	}
	sidecar := cstatus(rec, "sidecar")
	if !sidecar.GetReady() || !sidecar.GetStarted() || sidecar.GetState().GetRunning() == nil {
		t.Errorf("sidecar: %s ready=%v started=%v, want running, started and ready", stateString(sidecar.GetState()), sidecar.GetReady(), sidecar.GetStarted())
	}
	// Order (same clock, crisim's): init finished before the sidecar
	// started, and the sidecar started before the regular containers.
	initDone := init.GetState().GetTerminated().GetFinishedAt().AsTime()
	sidecarStart := sidecar.GetState().GetRunning().GetStartedAt().AsTime()
	if sidecarStart.Before(initDone) {
		t.Errorf("sidecar started at %s, before the init container finished at %s", sidecarStart, initDone)
	}
	for _, name := range []string{"app", "helper"} {
		cs := cstatus(rec, name)
		if s := cs.GetState().GetRunning().GetStartedAt().AsTime(); s.Before(sidecarStart) {
			t.Errorf("%s started at %s, before the sidecar at %s", name, s, sidecarStart)
		}
		if cs.GetRestartCount() != 0 {
			t.Errorf("%s restart count %d, want 0", name, cs.GetRestartCount())
		}
		if findEvent(rec, "Started", name) == nil {
			t.Errorf("no Started event for %s: %s", name, summary(rec))
		}
	}
	for _, c := range []string{"Initialized", "ContainersReady", "Ready"} {
		found := false
		for _, cond := range rec.GetStatus().GetConditions() {
			if cond.GetType() == c {
				found = true
				if cond.GetStatus() != syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE {
					t.Errorf("condition %s = %s, want TRUE", c, cond.GetStatus())
				}
			}
		}
		if !found {
			t.Errorf("condition %s missing: %v", c, rec.GetStatus().GetConditions())
		}
	}
	if got := n.readySandboxes(rec.GetPod().GetUid()); got != 1 {
		t.Errorf("crisim holds %d READY sandboxes of the pod, want 1", got)
	}
	// The containers are real host processes, found the way the shutdown
	// check looks for survivors (so that check is not vacuous).
	if procs := n.containerProcesses(); len(procs) != 3 {
		t.Errorf("host processes of the pod: %q, want 3 (sidecar, app, helper)", procs)
	}

	code, out, errOut := n.ctl("get", "pods")
	if code != 0 {
		t.Fatalf("syncpodctl get pods: exit %d: %s", code, errOut)
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "web" {
			row = f
		}
	}
	if len(row) < 4 || row[1] != "3/3" || row[2] != "Running" || row[3] != "0" {
		t.Errorf("syncpodctl get pods row %q, want web 3/3 Running 0 ...; output:\n%s", row, out)
	}
	code, out, errOut = n.ctl("describe", "pod", "web")
	if code != 0 {
		t.Fatalf("syncpodctl describe pod web: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Running", "sidecar", "helper", "Started", "Completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
}

// instance is one run of a container, as the status reported it.
type instance struct {
	id                 string
	started, finished  time.Time
	exitCode           int32
	terminationReason  string
	observedAsTerminal bool
}

// R-11.9 (with --backoff-initial=1s --backoff-max=4s): a
// container that always exits 1 under Always already waits 1 s after its
// first exit, then 2 s, 4 s, 4 s...; between restarts it waits in
// CrashLoopBackOff with a BackOff event. The healthy container next to it is never touched. The periodic
// resync is a minute, so the four restarts within the deadline can only
// come from PLEG events and the timers set at each back-off's expiry
// (DESIGN: "woken by a timer at that instant").
func TestCrashLoopBackOffRestartsAtGrowingIntervals(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{backoffInitial: time.Second, backoffMax: 4 * time.Second, resyncPeriod: time.Minute})
	n.apply(pod("crashy", container("crash", "sh", "-c", "exit 1"), sleeper("steady")))

	instances := map[string]*instance{}
	sawCrashLoop := ""
	record := func(id string, term *syncpodv1.ContainerStateTerminated) {
		if id == "" || term == nil || term.GetStartedAt() == nil || term.GetFinishedAt() == nil {
			return
		}
		instances[id] = &instance{id: id, started: term.GetStartedAt().AsTime(), finished: term.GetFinishedAt().AsTime(),
			exitCode: term.GetExitCode(), terminationReason: term.GetReason()}
	}
	rec := n.waitRecord("crashy", converge, "crash restarted 4 times", func(r *plannerv1.PodRecord) bool {
		cs := cstatus(r, "crash")
		if cs == nil {
			return false
		}
		record(cs.GetLastTerminationState().GetTerminated().GetContainerId(), cs.GetLastTerminationState().GetTerminated())
		record(cs.GetState().GetTerminated().GetContainerId(), cs.GetState().GetTerminated())
		if w := cs.GetState().GetWaiting(); w != nil && w.GetReason() == "CrashLoopBackOff" {
			sawCrashLoop = w.GetMessage()
		}
		return cs.GetRestartCount() >= 4 && sawCrashLoop != ""
	})

	if !strings.Contains(sawCrashLoop, "back-off") {
		t.Errorf("CrashLoopBackOff waiting message %q does not give the back-off", sawCrashLoop)
	}
	ev := findEvent(rec, "BackOff", "crash")
	if ev == nil || ev.GetType() != syncpodv1.EventType_EVENT_TYPE_WARNING {
		t.Errorf("no Warning BackOff event for crash: %s", summary(rec))
	}
	steady := cstatus(rec, "steady")
	if steady.GetRestartCount() != 0 || steady.GetState().GetRunning() == nil {
		t.Errorf("steady container: restarts %d, state %s; want untouched and running", steady.GetRestartCount(), stateString(steady.GetState()))
	}

	// Lower bounds only: restart k waits at least the k-th delay after the
	// previous exit (1 s, 2 s, 4 s, 4 s): the first exit too. A missed instance only widens a
	// gap, so the bounds stay sound when polling skips one.
	runs := make([]*instance, 0, len(instances))
	for _, in := range instances {
		runs = append(runs, in)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].started.Before(runs[j].started) })
	if len(runs) < 3 {
		t.Fatalf("observed %d terminated instances of crash, want at least 3", len(runs))
	}
	delays := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	var gaps []string
	for i := 1; i < len(runs); i++ {
		gap := runs[i].started.Sub(runs[i-1].finished)
		gaps = append(gaps, gap.Round(10*time.Millisecond).String())
		want := delays[min(i-1, len(delays)-1)]
		if gap < want-50*time.Millisecond {
			t.Errorf("instance %d started %s after the previous exit, want at least %s (back-off)", i, gap, want)
		}
	}
	t.Logf("crash instances restarted after exits by gaps %v", gaps)
	for _, r := range runs {
		if r.exitCode != 1 || r.terminationReason != "Error" {
			t.Errorf("instance %s terminated with %d %q, want 1 Error", r.id, r.exitCode, r.terminationReason)
		}
	}

	// Recovery: the user fixes the command. A new spec is a fresh back-off
	// (DESIGN), so the fixed container waits the first delay at most, not
	// the old one, runs, and the pod becomes Ready; the restart count goes on.
	before := cstatus(rec, "crash").GetRestartCount()
	n.apply(pod("crashy", sleeper("crash"), sleeper("steady")))
	rec = n.waitRecord("crashy", converge, "the fixed container running and the pod Ready", func(r *plannerv1.PodRecord) bool {
		cs := cstatus(r, "crash")
		return cs.GetState().GetRunning() != nil && allReady(r)
	})
	// Goes on, not reset: the fix may land while a crashed instance is
	// being replaced, so the count may or may not have moved yet.
	if got := cstatus(rec, "crash").GetRestartCount(); got < before || got == 0 {
		t.Errorf("restart count %d after the fix, want it to go on from %d", got, before)
	}
}

// R-4.3 (1), R-10.2 and DESIGN (pods are mutable): changing one
// container's env restarts that container only; the other one and the
// sandbox are kept.
func TestSpecChangeRestartsOnlyTheChangedContainer(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	p := pod("mutable", sleeper("keep"), sleeper("change"))
	stored := n.apply(p)
	before := n.waitRunning("mutable", converge)
	keepID, changeID := cstatus(before, "keep").GetContainerId(), cstatus(before, "change").GetContainerId()

	p.Spec.Containers[1].Env = []*syncpodv1.EnvVar{{Name: "COLOUR", Value: "blue"}}
	resp, err := n.pods.ApplyPod(rpcCtx(t), &plannerv1.ApplyPodRequest{Pod: p})
	if err != nil {
		t.Fatalf("ApplyPod (changed env): %v", err)
	}
	if resp.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_UPDATED {
		t.Errorf("ApplyPod result %s, want UPDATED", resp.GetResult())
	}
	if resp.GetPod().GetUid() != stored.GetUid() {
		t.Errorf("uid changed on update: %s -> %s", stored.GetUid(), resp.GetPod().GetUid())
	}
	after := n.waitRecord("mutable", converge, "change restarted and all ready", func(r *plannerv1.PodRecord) bool {
		cs := cstatus(r, "change")
		return cs.GetContainerId() != "" && cs.GetContainerId() != changeID && allReady(r)
	})
	if got := cstatus(after, "keep"); got.GetContainerId() != keepID || got.GetRestartCount() != 0 {
		t.Errorf("unchanged container was touched: id %s -> %s, restarts %d", keepID, got.GetContainerId(), got.GetRestartCount())
	}
	if got := cstatus(after, "change").GetRestartCount(); got != 1 {
		t.Errorf("changed container restart count %d, want 1", got)
	}
	if findEvent(after, "Killing", "change") == nil {
		t.Errorf("no Killing event for the changed container: %s", summary(after))
	}
	if ev := findEvent(after, "Killing", "keep"); ev != nil {
		t.Errorf("Killing event for the unchanged container: %v", ev)
	}
	sbs, _ := n.runtimeOf(stored.GetUid())
	if len(sbs) != 1 || sbs[0].GetState().String() != "SANDBOX_READY" {
		t.Errorf("sandboxes after a container change: %v, want the one READY sandbox", sbs)
	}
	if got := n.ctlEnv(t, "mutable", "change"); got != "blue" {
		t.Errorf("restarted container's COLOUR = %q, want blue", got)
	}
}

// ctlEnv reads the stored spec's env through syncpodctl get -o jsonpath,
// the way a user would.
func (n *node) ctlEnv(t *testing.T, podName, containerName string) string {
	t.Helper()
	code, out, errOut := n.ctl("get", "pods", podName, "-o",
		`jsonpath={.spec.containers[?(@.name=="`+containerName+`")].env[?(@.name=="COLOUR")].value}`)
	if code != 0 {
		t.Fatalf("syncpodctl get pods %s -o jsonpath: exit %d: %s", podName, code, errOut)
	}
	return out
}

// deleting a pod stops its containers with SIGTERM and the
// pod's grace period; a container that exits on SIGTERM lets the deletion
// finish long before the grace period, and only then is the pod forgotten,
// with nothing of it left in the runtime.
func TestDeleteWithGraceRemovesEverything(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	termed := filepath.Join(t.TempDir(), "termed")
	p := pod("graceful", container("trap", "sh", "-c", `trap "touch `+termed+`; exit 0" TERM; while true; do sleep 0.2; done`))
	grace := int64(60)
	p.Spec.TerminationGracePeriodSeconds = &grace
	uid := n.apply(p).GetUid()
	n.waitRunning("graceful", converge)

	began := time.Now()
	if code, out, errOut := n.ctl("delete", "pod", "graceful"); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("syncpodctl delete pod graceful: exit %d: %s %s", code, out, errOut)
	}
	// Well under the 60 s grace period: SIGTERM was delivered and the
	// container's exit was noticed, not waited out with SIGKILL.
	eventually(t, 30*time.Second, "pod gone from ListPods", func() (bool, string) {
		names := n.podNames()
		return !slices.Contains(names, "default/graceful"), strings.Join(names, ",")
	})
	t.Logf("deletion took %s", time.Since(began).Round(10*time.Millisecond))
	if _, err := os.Stat(termed); err != nil {
		t.Errorf("the container's SIGTERM handler did not run: %v", err)
	}
	// The store forgets the pod only after its resources are removed.
	if sbs, cs := n.runtimeOf(uid); len(sbs) != 0 || len(cs) != 0 {
		t.Errorf("crisim still holds %d sandboxes and %d containers of the deleted pod", len(sbs), len(cs))
	}
	eventually(t, converge, "the PLEG forgets the pod", func() (bool, string) {
		resp, err := n.plegc.ListPodStatuses(rpcCtx(t), &plegv1.ListPodStatusesRequest{})
		if err != nil {
			return false, err.Error()
		}
		for _, o := range resp.GetPods() {
			if o.GetUid() == uid && (len(o.GetSandboxes()) > 0 || len(o.GetContainers()) > 0) {
				return false, "still listed: " + o.String()
			}
		}
		return true, ""
	})
	if code, _, _ := n.ctl("get", "pods", "graceful"); code != 3 {
		t.Errorf("syncpodctl get pods graceful after deletion: exit %d, want 3 (not found)", code)
	}
}

// Deleting a pod removes its log directory, as the kubelet removes the log
// directories of deleted pods, and its crash-loop back-off entries; another
// pod's stay.
func TestDeleteRemovesLogDirectoryAndBackoffs(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	crashy := n.apply(pod("crashy", container("crash", "sh", "-c", "echo bye; exit 1"), sleeper("steady")))
	n.apply(pod("keeper", container("crash", "sh", "-c", "exit 2")))
	for _, name := range []string{"crashy", "keeper"} {
		n.waitRecord(name, converge, "a restart in back-off", func(r *plannerv1.PodRecord) bool { return cstatus(r, "crash").GetRestartCount() >= 1 })
	}
	dirOf := func(p *syncpodv1.Pod) string {
		return filepath.Join(n.logDir, "default_"+p.GetName()+"_"+p.GetUid())
	}
	keeper, err := n.get("keeper")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*syncpodv1.Pod{crashy, keeper.GetPod()} {
		if _, err := os.Stat(filepath.Join(dirOf(p), "crash")); err != nil {
			t.Fatalf("no log directory for %s: %v", p.GetName(), err)
		}
	}
	if code, out, errOut := n.ctl("backoffs", "list"); code != 0 || !strings.Contains(out, "default/crashy") || !strings.Contains(out, "default/keeper") {
		t.Fatalf("backoffs list before delete: exit %d\n%s%s", code, out, errOut)
	}

	if code, out, errOut := n.ctl("delete", "pod", "crashy"); code != 0 || !strings.Contains(out, `pod "crashy" deleted`) {
		t.Fatalf("delete: exit %d: %s %s", code, out, errOut)
	}
	// delete waits until the pod is gone; its leftovers went first.
	if _, err := os.Stat(dirOf(crashy)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log directory %s of the deleted pod: %v, want it removed", dirOf(crashy), err)
	}
	code, out, errOut := n.ctl("backoffs", "list")
	if code != 0 || strings.Contains(out, "crashy") || strings.Contains(out, crashy.GetUid()[:8]) || !strings.Contains(out, "default/keeper") {
		t.Errorf("backoffs list after delete: exit %d, want keeper's only\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dirOf(keeper.GetPod()), "crash")); err != nil {
		t.Errorf("another pod's log directory went: %v", err)
	}
}

const staticPod = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: busybox:1.36
    command: ["sleep", "3600"]
    env:
    - name: COLOUR
      value: %s
`

// Static manifests: a Pod file in --manifest-dir becomes a pod; changing
// the file updates it (its container restarts with the new env); removing
// the file deletes the pod and everything it ran.
func TestStaticManifestAddChangeRemove(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	file := filepath.Join(n.manifestDir, "static-web.yaml")
	write := func(colour string) {
		// Write then rename, so the source never reads half a file.
		tmp := filepath.Join(n.manifestDir, ".tmp")
		if err := os.WriteFile(tmp, []byte(strings.Replace(staticPod, "%s", colour, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write("red")
	rec := n.waitRunning("static-web", converge)
	uid, firstID := rec.GetPod().GetUid(), cstatus(rec, "web").GetContainerId()
	if got := n.ctlEnv(t, "static-web", "web"); got != "red" {
		t.Errorf("static pod COLOUR = %q, want red", got)
	}

	write("green")
	rec = n.waitRecord("static-web", converge, "web restarted with COLOUR=green", func(r *plannerv1.PodRecord) bool {
		cs := cstatus(r, "web")
		env := r.GetPod().GetSpec().GetContainers()[0].GetEnv()
		return len(env) == 1 && env[0].GetValue() == "green" && cs.GetContainerId() != firstID && allReady(r)
	})
	if rec.GetPod().GetUid() != uid {
		t.Errorf("static pod uid changed on update: %s -> %s", uid, rec.GetPod().GetUid())
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	eventually(t, converge, "static pod deleted after its file was removed", func() (bool, string) {
		names := n.podNames()
		return !slices.Contains(names, "default/static-web"), strings.Join(names, ",")
	})
	if sbs, cs := n.runtimeOf(uid); len(sbs) != 0 || len(cs) != 0 {
		t.Errorf("crisim still holds %d sandboxes and %d containers of the removed static pod", len(sbs), len(cs))
	}
}

// R-2.2 (1), restart: a planner killed with SIGKILL, one pod
// applied a moment before, comes back with every desired pod from its
// database, adopts the running containers without restarting them and
// ends with exactly one READY sandbox per pod.
func TestPlannerSIGKILLRestartKeepsPodsWithoutDuplicates(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	uids := map[string]string{}
	for _, name := range []string{"one", "two"} {
		uids[name] = n.apply(pod(name, sleeper("main"))).GetUid()
	}
	ids := map[string]string{}
	for _, name := range []string{"one", "two"} {
		ids[name] = cstatus(n.waitRunning(name, converge), "main").GetContainerId()
	}
	// Applied, then killed before (or while) the planner acts on it.
	uids["three"] = n.apply(pod("three", sleeper("main"), sleeper("side"))).GetUid()
	n.killPlanner()

	if got, want := n.podNames(), []string{"default/one", "default/three", "default/two"}; !slices.Equal(got, want) {
		t.Fatalf("pods after a SIGKILL restart: %v, want %v", got, want)
	}
	for _, name := range []string{"one", "two", "three"} {
		rec := n.waitRunning(name, converge)
		if rec.GetPod().GetUid() != uids[name] {
			t.Errorf("%s: uid %s after restart, want %s", name, rec.GetPod().GetUid(), uids[name])
		}
		if id, ok := ids[name]; ok {
			if cs := cstatus(rec, "main"); cs.GetContainerId() != id || cs.GetRestartCount() != 0 {
				t.Errorf("%s: running container replaced across the planner restart: %s -> %s (restarts %d)", name, id, cs.GetContainerId(), cs.GetRestartCount())
			}
		}
	}
	for _, name := range []string{"one", "two", "three"} {
		eventually(t, converge, name+": exactly one READY sandbox", func() (bool, string) {
			got := n.readySandboxes(uids[name])
			return got == 1, strings.Repeat("READY ", got)
		})
	}
}

// ApplyPod validates: a pod with several problems is refused with
// InvalidArgument listing every field at once, and nothing is stored.
func TestBadPodRefusedWithEveryFieldError(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	bad := &syncpodv1.Pod{
		Name: "Bad_Name", Namespace: "default",
		Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{
			{Name: "", Image: ""},
			{Name: "dup", Image: image, Command: []string{"true"}},
			{Name: "dup", Image: image, Command: []string{"true"}},
		}},
	}
	_, err := n.pods.ApplyPod(rpcCtx(t), &plannerv1.ApplyPodRequest{Pod: bad})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("ApplyPod of a bad pod: %v, want InvalidArgument", err)
	}
	var fields []string
	for _, fe := range fielderr.FromStatus(st) {
		// Paths are relative to the request, as Plan's are.
		fields = append(fields, fe.Path)
	}
	for _, want := range []string{"pod.name", "pod.spec.containers[0].name", "pod.spec.containers[0].image", "pod.spec.containers[2].name"} {
		if !slices.Contains(fields, want) {
			t.Errorf("BadRequest violations %q lack %s", fields, want)
		}
	}
	// syncpodctl says the same and exits 1.
	js, err := protojson.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(file, js, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := n.ctl("apply", "-f", file)
	if code != 1 || !strings.Contains(errOut, "spec.containers[2].name") || !strings.Contains(errOut, "spec.containers[0].image") {
		t.Errorf("syncpodctl apply of a bad pod: exit %d, stdout %q, stderr %q; want exit 1 naming every field", code, out, errOut)
	}
	if names := n.podNames(); len(names) != 0 {
		t.Errorf("pods stored after refusals: %v", names)
	}
	sbs, err := n.cri.ListPodSandbox(rpcCtx(t), nil)
	if err != nil || len(sbs) != 0 {
		t.Errorf("crisim sandboxes after refusals: %d (err %v), want 0", len(sbs), err)
	}
}

// R-4.3 (2), R-4.4: an exec liveness probe that fails (the file it tests
// does not exist) kills and restarts its container with a Killing event;
// the same probe on an existing file never restarts the other container,
// so the restarts are the probe's verdict, not an exec failure.
func TestExecLivenessProbeFailureRestartsContainer(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	dir := t.TempDir()
	present := filepath.Join(dir, "alive")
	if err := os.WriteFile(present, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	probe := func(file string) *syncpodv1.Probe {
		return &syncpodv1.Probe{
			Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"sh", "-c", "test -f " + file + " || { echo no " + file + "; exit 1; }"}}},
			// A generous timeout: a timed-out probe fails like a failed
			// one, and on a loaded machine one exec has taken over a
			// second, which would restart the healthy container.
			PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 30,
		}
	}
	sick, healthy := sleeper("sick"), sleeper("healthy")
	sick.LivenessProbe = probe(filepath.Join(dir, "missing"))
	healthy.LivenessProbe = probe(present)
	n.apply(pod("probed", sick, healthy))

	rec := n.waitRecord("probed", converge, "sick restarted twice by its liveness probe", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "sick").GetRestartCount() >= 2 && findEvent(r, "Killing", "sick") != nil
	})
	ev := findEvent(rec, "Killing", "sick")
	if !strings.Contains(strings.ToLower(ev.GetMessage()), "liveness") {
		t.Errorf("Killing event message %q does not name the liveness probe", ev.GetMessage())
	}
	// Every failed attempt is a Warning Unhealthy event with the probe's
	// output, as the kubelet records it.
	if ev := findEvent(rec, "Unhealthy", "sick"); ev.GetType() != syncpodv1.EventType_EVENT_TYPE_WARNING ||
		ev.GetMessage() != "Liveness probe failed: no "+filepath.Join(dir, "missing")+"\n" {
		t.Errorf("Unhealthy event of sick: %v", ev)
	}
	if findEvent(rec, "Unhealthy", "healthy") != nil {
		t.Error("Unhealthy event for the healthy container")
	}
	if h := cstatus(rec, "healthy"); h.GetRestartCount() != 0 || findEvent(rec, "Killing", "healthy") != nil {
		t.Errorf("healthy container (probe passes) was restarted: %s", summary(rec))
	}
	if got := n.readySandboxes(rec.GetPod().GetUid()); got != 1 {
		t.Errorf("crisim holds %d READY sandboxes, want 1 (a liveness kill restarts a container, not the pod)", got)
	}
}

// TestStaticManifestRemovedWhilePlannerDown: a manifest deleted while no
// planner runs is noticed at the next start (its pod carries the
// kubelet's config.source annotation), and its pod is deleted.
func TestStaticManifestRemovedWhilePlannerDown(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	file := filepath.Join(n.manifestDir, "static-web.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(staticPod, "%s", "blue", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := n.waitRunning("static-web", converge)
	if got := rec.GetPod().GetAnnotations()["kubernetes.io/config.source"]; got != "file" {
		t.Errorf("static pod's config.source annotation = %q, want file", got)
	}
	uid := rec.GetPod().GetUid()
	n.killPlannerWhile(func() {
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, converge, "the static pod gone from the planner and the runtime", func() (bool, string) {
		_, err := n.get("static-web")
		sbs, cs := n.runtimeOf(uid)
		return err != nil && len(sbs) == 0 && len(cs) == 0, fmt.Sprintf("get: %v; %d sandboxes, %d containers", err, len(sbs), len(cs))
	})
}

// and DESIGN (pods are mutable): a container removed from the spec
// by an update is stopped, after its preStop hook has run (the hook writes
// a file), and the other container and the sandbox are kept.
func TestRemovedContainerRunsItsPreStopHookOnCrisim(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	mark := filepath.Join(t.TempDir(), "prestop-ran")
	gone := sleeper("gone")
	gone.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{
		Action: &syncpodv1.LifecycleHandler_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"sh", "-c", "echo bye > " + mark}}}}}
	p := pod("shrink", sleeper("keep"), gone)
	// The hook is cut off at the grace period; 2 s has been short for an
	// exec on a loaded machine. sleep ends at SIGTERM, so the longer
	// grace costs nothing once the hook has run.
	grace := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &grace
	stored := n.apply(p)
	before := n.waitRunning("shrink", converge)
	keepID, goneID := cstatus(before, "keep").GetContainerId(), cstatus(before, "gone").GetContainerId()
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the preStop hook ran before the container was removed")
	}

	p.Spec.Containers = p.Spec.Containers[:1]
	if _, err := n.pods.ApplyPod(rpcCtx(t), &plannerv1.ApplyPodRequest{Pod: p}); err != nil {
		t.Fatalf("ApplyPod (container removed): %v", err)
	}
	eventually(t, converge, "the removed container stopped", func() (bool, string) {
		_, cs := n.runtimeOf(stored.GetUid())
		for _, c := range cs {
			if c.GetId() == goneID {
				return c.GetState().String() == "CONTAINER_EXITED", c.GetState().String()
			}
		}
		return true, "gone from the runtime"
	})
	if b, err := os.ReadFile(mark); err != nil || strings.TrimSpace(string(b)) != "bye" {
		t.Errorf("preStop hook output %q, %v; want bye", b, err)
	}
	after := n.waitRecord("shrink", converge, "Killing event for the removed container", func(r *plannerv1.PodRecord) bool {
		return findEvent(r, "Killing", "gone") != nil
	})
	if got := cstatus(after, "keep"); got.GetContainerId() != keepID || got.GetRestartCount() != 0 {
		t.Errorf("the kept container was touched: id %s -> %s, restarts %d", keepID, got.GetContainerId(), got.GetRestartCount())
	}
	if sbs, _ := n.runtimeOf(stored.GetUid()); n.readySandboxes(stored.GetUid()) != 1 {
		t.Errorf("sandboxes after removing a container: %v, want the one READY sandbox", sbs)
	}
}

// The kubelet's $(VAR) expansion reaches the process: args see the final
// environment, an env value sees the variables before it, $$ escapes.
func TestDollarVarExpansionOnCrisim(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	c := container("echo", "sh", "-c", `echo "$1|$2|$URL"; sleep 3600`, "sh", "$(GREETING)", "$$(GREETING)")
	c.Env = []*syncpodv1.EnvVar{{Name: "GREETING", Value: "hi"}, {Name: "URL", Value: "http://$(GREETING):$(PORT)"}, {Name: "PORT", Value: "80"}}
	n.apply(pod("expand", c))
	n.waitRunning("expand", converge)
	eventually(t, converge, "the expanded line in the log", func() (bool, string) {
		_, out, _ := n.ctl("logs", "expand", "-c", "echo")
		return strings.Contains(out, "hi|$(GREETING)|http://hi:$(PORT)"), out
	})
}

// for a mutable pod: an update of a pod-level setting the
// sandbox was created with (host aliases) replaces the sandbox, with a
// SandboxChanged event, and restarts the containers in the new one.
func TestPodLevelChangeReplacesTheSandboxOnCrisim(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	p := pod("resandbox", sleeper("app"))
	stored := n.apply(p)
	before := n.waitRunning("resandbox", converge)
	oldSandboxes, _ := n.runtimeOf(stored.GetUid())
	if len(oldSandboxes) != 1 {
		t.Fatalf("sandboxes before the update: %v", oldSandboxes)
	}
	oldID := oldSandboxes[0].GetId()

	p.Spec.HostAliases = []*syncpodv1.HostAlias{{Ip: "127.0.0.2", Hostnames: []string{"db.local"}}}
	if _, err := n.pods.ApplyPod(rpcCtx(t), &plannerv1.ApplyPodRequest{Pod: p}); err != nil {
		t.Fatalf("ApplyPod (host aliases): %v", err)
	}
	after := n.waitRecord("resandbox", converge, "app restarted in a new sandbox", func(r *plannerv1.PodRecord) bool {
		cs := cstatus(r, "app")
		return cs.GetContainerId() != "" && cs.GetContainerId() != cstatus(before, "app").GetContainerId() && allReady(r) &&
			findEvent(r, "SandboxChanged", "") != nil
	})
	if got := cstatus(after, "app").GetRestartCount(); got != 1 {
		t.Errorf("restart count %d, want 1", got)
	}
	eventually(t, converge, "one ready sandbox, not the old one", func() (bool, string) {
		sbs, _ := n.runtimeOf(stored.GetUid())
		var ready []string
		for _, sb := range sbs {
			if sb.GetState().String() == "SANDBOX_READY" {
				ready = append(ready, sb.GetId())
			}
		}
		return len(ready) == 1 && ready[0] != oldID, fmt.Sprint(ready)
	})
}
