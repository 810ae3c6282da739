package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/executortest"
	"github.com/syncpod/syncpod/planner/plannertest"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/server"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fakePlanner is plannertest's planner, with the Plan, Exec, Attach,
// PortForward and ListPodStats syncpodctl's tests script (Plan here, the
// streams in streams_test.go).
type fakePlanner struct {
	*plannertest.Planner
	mu      sync.Mutex
	planReq *plannerv1.PlanRequest
	// execStarts are the Exec sessions opened.
	execStarts []*plannerv1.ExecStart
}

func (f *fakePlanner) lastLogs() *plannerv1.ContainerLogsRequest {
	reqs := f.LogRequests()
	return reqs[len(reqs)-1]
}

func (f *fakePlanner) Plan(_ context.Context, req *plannerv1.PlanRequest) (*plannerv1.PlanResponse, error) {
	f.mu.Lock()
	f.planReq = req
	f.mu.Unlock()
	a := &syncpodv1.PodActions{
		KillPod: true, CreateSandbox: true, SandboxReason: syncpodv1.SandboxReason_SANDBOX_REASON_NO_SANDBOX,
		KillPodReason: syncpodv1.KillPodReason_KILL_POD_REASON_SANDBOX_CHANGED,
	}
	for _, c := range req.GetPod().GetSpec().GetContainers() {
		a.ContainersToStart = append(a.ContainersToStart, &syncpodv1.ContainerStart{Name: c.GetName(), Reason: syncpodv1.StartReason_START_REASON_NEW_SANDBOX, Message: "container " + c.GetName() + " starts in a new sandbox"})
	}
	return &plannerv1.PlanResponse{Actions: a}, nil
}

// fakePleg answers GetPodStatus with one observed pod.
type fakePleg struct {
	plegv1.UnimplementedPlegServiceServer
	mu       sync.Mutex
	observed *syncpodv1.ObservedPod
	asked    string
}

func (f *fakePleg) GetPodStatus(_ context.Context, req *plegv1.GetPodStatusRequest) (*plegv1.GetPodStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = req.GetPodUid()
	return &plegv1.GetPodStatusResponse{Observed: f.observed}, nil
}

type harness struct {
	planner  *fakePlanner
	executor *executortest.Executor
	pleg     *fakePleg
	env      Env
	out, err *bytes.Buffer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{planner: &fakePlanner{Planner: &plannertest.Planner{}}, executor: &executortest.Executor{}, pleg: &fakePleg{}, out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	h.planner.SetClock(func() time.Time { return now })
	h.planner.SetValidate(func(p *syncpodv1.Pod) error {
		if p.GetName() == "bad" {
			return errors.New("spec.containers[0].image: must not be empty")
		}
		return nil
	})
	h.executor.SetBackoffs(&executorv1.BackoffEntry{
		PodUid: "u-crash", PodName: "crash", ContainerName: "app", Delay: durationpb.New(40 * time.Second),
		BackoffUntil: timestamppb.New(now.Add(25 * time.Second)),
	})
	listeners := map[string]*bufconn.Listener{}
	// peer dials another fake server, as the planner dials its peers.
	peer := func(addr string) grpc.ClientConnInterface {
		conn, err := grpc.NewClient("passthrough:///"+addr,
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return listeners[addr].DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	for addr, register := range map[string]func(*grpc.Server){
		"planner": func(s *grpc.Server) {
			plannerv1.RegisterPlannerServiceServer(s, h.planner)
			// The real version service; the fake PLEG serves none.
			syncpodv1.RegisterVersionServiceServer(s, server.NewVersionService(server.VersionOptions{Component: "planner", Version: "v9.9.9",
				Peers: []server.VersionPeer{{Component: "executor", Address: "executor", Conn: peer("executor")}, {Component: "pleg", Address: "pleg", Conn: peer("pleg")}}}))
		},
		"executor": func(s *grpc.Server) {
			executorv1.RegisterExecutorServiceServer(s, h.executor)
			syncpodv1.RegisterVersionServiceServer(s, server.NewVersionService(server.VersionOptions{Component: "executor", Version: "v9.9.8",
				Runtime: func(context.Context) (*runtimeapi.VersionResponse, error) {
					return &runtimeapi.VersionResponse{RuntimeName: "fakeruntime", RuntimeVersion: "1.2.3", RuntimeApiVersion: "v1"}, nil
				}}))
		},
		"pleg": func(s *grpc.Server) { plegv1.RegisterPlegServiceServer(s, h.pleg) },
	} {
		l := bufconn.Listen(1 << 20)
		s := grpc.NewServer()
		register(s)
		go func() { _ = s.Serve(l) }()
		t.Cleanup(s.Stop)
		listeners[addr] = l
	}
	h.env = Env{
		Stdin: strings.NewReader(""), Stdout: h.out, Stderr: h.err,
		Getenv: func(string) string { return "" },
		Now:    func() time.Time { return now },
		Dial: func(addr string) (grpc.ClientConnInterface, io.Closer, error) {
			l, ok := listeners[addr]
			if !ok {
				return nil, nil, status.Errorf(codes.Unavailable, "no server at %s", addr)
			}
			conn, err := grpc.NewClient("passthrough:///"+addr,
				grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }),
				grpc.WithTransportCredentials(insecure.NewCredentials()))
			return conn, conn, err
		},
	}
	return h
}

func (h *harness) run(t *testing.T, args ...string) int {
	t.Helper()
	h.out.Reset()
	h.err.Reset()
	return Run(context.Background(), append([]string{"--server=planner", "--executor=executor"}, args...), h.env)
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApplyFromDirectoryAndStdin(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.json", `{"name":"a","spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	writeFile(t, dir, "b.yaml", "name: b\nspec:\n  containers:\n  - name: c\n    image: busybox\n---\nname: c\nspec:\n  containers:\n  - name: c\n    image: busybox\n")
	writeFile(t, dir, "notes.txt", "ignored")
	if code := h.run(t, "apply", "-f", dir); code != 0 {
		t.Fatalf("apply exit %d: %s", code, h.err)
	}
	if got, want := h.out.String(), "pod/a created\npod/b created\npod/c created\n"; got != want {
		t.Fatalf("apply output %q, want %q", got, want)
	}
	h.env.Stdin = strings.NewReader(`{"name":"a","spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	if code := h.run(t, "apply", "-f", "-"); code != 0 || h.out.String() != "pod/a unchanged\n" {
		t.Fatalf("re-apply: exit %d, %q", code, h.out)
	}
}

func TestApplyErrors(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	tests := []struct {
		name, file, content string
		code                int
		stderr              string
	}{
		{"server refuses", "bad.json", `{"name":"bad","spec":{"containers":[{"name":"c"}]}}`, 1, "spec.containers[0].image"},
		{"kubernetes manifest without converter", "k.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: k\n", 2, "cannot convert Kubernetes"},
		{"other kinds are refused", "d.yaml", "apiVersion: apps/v1\nkind: Deployment\n", 2, "only v1 Pods"},
		{"unknown fields are refused", "u.json", `{"name":"u","spek":{}}`, 2, "not a syncpod Pod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, dir, tc.file, tc.content)
			if code := h.run(t, "apply", "-f", f); code != tc.code || !strings.Contains(h.err.String(), tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, h.err, tc.code, tc.stderr)
			}
		})
	}
	if code := h.run(t, "apply"); code != 2 {
		t.Fatalf("apply without -f: exit %d", code)
	}
}

// apply dials before it reads its files, so the connection is under way
// while they are decoded, but a bad file is still reported before a bad
// server address.
func TestApplyReportsItsFilesBeforeItsServer(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "p.json", `{"name":"p","spec":{"containers":[{"name":"c","image":"i"}]}}`)
	for _, tc := range []struct {
		file, stderr string
	}{
		{filepath.Join(dir, "missing.yaml"), "missing.yaml: no such file"},
		{good, "is a TCP address"},
	} {
		var out, errb bytes.Buffer
		code := Run(t.Context(), []string{"--server", "127.0.0.1:1", "apply", "-f", tc.file}, Env{
			Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
		})
		if code != exitUsage || !strings.Contains(errb.String(), tc.stderr) || out.Len() != 0 {
			t.Errorf("apply -f %s: exit %d, stdout %q, stderr %q; want %d and %q", tc.file, code, out.String(), errb.String(), exitUsage, tc.stderr)
		}
	}
}

func TestApplyConvertsKubernetesManifests(t *testing.T) {
	h := newHarness(t)
	h.env.ConvertKubernetes = func(js []byte) (*syncpodv1.Pod, []string, error) {
		var m struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal(js, &m); err != nil {
			return nil, nil, err
		}
		return &syncpodv1.Pod{Name: m.Metadata.Name}, []string{"spec.nodeSelector: ignored on a single node"}, nil
	}
	f := writeFile(t, t.TempDir(), "k.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube\n")
	if code := h.run(t, "apply", "-f", f); code != 0 || h.out.String() != "pod/kube created\n" {
		t.Fatalf("exit %d out %q err %q", code, h.out, h.err)
	}
	if !strings.Contains(h.err.String(), "Warning: "+f+": pod/kube: spec.nodeSelector") {
		t.Fatalf("warning not shown: %q", h.err)
	}
}

func running(name string, ready bool, restarts int32) *syncpodv1.ContainerStatus {
	return &syncpodv1.ContainerStatus{Name: name, Ready: ready, Started: true, RestartCount: restarts,
		State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Running{Running: &syncpodv1.ContainerStateRunning{StartedAt: timestamppb.New(now.Add(-time.Minute))}}}}
}

func waiting(name, reason string, restarts int32) *syncpodv1.ContainerStatus {
	return &syncpodv1.ContainerStatus{Name: name, RestartCount: restarts,
		State:                &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Waiting{Waiting: &syncpodv1.ContainerStateWaiting{Reason: reason}}},
		LastTerminationState: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Terminated{Terminated: &syncpodv1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: timestamppb.New(now.Add(-90 * time.Second))}}}}
}

func record(name string, init, main []*syncpodv1.ContainerStatus, phase syncpodv1.PodPhase) *plannerv1.PodRecord {
	spec := &syncpodv1.PodSpec{}
	for _, c := range init {
		spec.InitContainers = append(spec.InitContainers, &syncpodv1.Container{Name: c.GetName(), Image: "busybox"})
	}
	for _, c := range main {
		spec.Containers = append(spec.Containers, &syncpodv1.Container{Name: c.GetName(), Image: "busybox"})
	}
	return &plannerv1.PodRecord{
		Pod:    &syncpodv1.Pod{Name: name, Uid: "uid-" + name, CreationTime: timestamppb.New(now.Add(-5 * time.Minute)), Spec: spec},
		Status: &syncpodv1.PodStatus{Phase: phase, InitContainerStatuses: init, ContainerStatuses: main},
	}
}

func TestGetPodsTable(t *testing.T) {
	h := newHarness(t)
	pending := &syncpodv1.ContainerStatus{Name: "second", State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Waiting{Waiting: &syncpodv1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	done := &syncpodv1.ContainerStatus{Name: "first", State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Terminated{Terminated: &syncpodv1.ContainerStateTerminated{Reason: "Completed"}}}}
	gone := record("gone", nil, []*syncpodv1.ContainerStatus{running("a", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	gone.Pod.DeletionTime = timestamppb.New(now)
	x := record("x", nil, nil, syncpodv1.PodPhase_POD_PHASE_PENDING)
	x.Pod.Namespace = "other"
	init := record("init", []*syncpodv1.ContainerStatus{done, pending}, []*syncpodv1.ContainerStatus{waiting("app", "PodInitializing", 0)}, syncpodv1.PodPhase_POD_PHASE_PENDING)
	init.Status.InitContainerStatuses[1].State.State = &syncpodv1.ContainerStateDetail_Running{Running: &syncpodv1.ContainerStateRunning{}}
	for _, r := range []*plannerv1.PodRecord{
		record("web", nil, []*syncpodv1.ContainerStatus{running("a", true, 0), running("b", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING),
		record("crash", nil, []*syncpodv1.ContainerStatus{waiting("app", "CrashLoopBackOff", 4)}, syncpodv1.PodPhase_POD_PHASE_RUNNING),
		init, gone, x,
	} {
		h.planner.PutPod(r)
	}
	if code := h.run(t, "get", "pods"); code != 0 {
		t.Fatalf("exit %d: %s", code, h.err)
	}
	want := "" +
		"NAME    READY   STATUS             RESTARTS      AGE\n" +
		"crash   0/1     CrashLoopBackOff   4 (90s ago)   5m0s\n" +
		"gone    1/1     Terminating        0             5m0s\n" +
		"init    0/1     Init:1/2           0             5m0s\n" +
		"web     2/2     Running            0             5m0s\n"
	if h.out.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", h.out, want)
	}
	if code := h.run(t, "get", "pods", "-A", "-o", "wide"); code != 0 || !strings.Contains(h.out.String(), "NAMESPACE") || !strings.Contains(h.out.String(), "uid-x") {
		t.Fatalf("wide all-namespaces: exit %d\n%s", code, h.out)
	}
	if code := h.run(t, "get", "pods", "nosuch"); code != 3 {
		t.Fatalf("get of a missing pod: exit %d, want 3", code)
	}
	if code := h.run(t, "get", "pods", "web", "-o", "json"); code != 0 {
		t.Fatalf("json: exit %d", code)
	}
	var decoded map[string]any
	if err := json.Unmarshal(h.out.Bytes(), &decoded); err != nil || decoded["kind"] != "Pod" || decoded["apiVersion"] != "v1" {
		t.Fatalf("-o json of one pod is not a v1 Pod: %v\n%s", err, h.out)
	}
	if code := h.run(t, "get", "pods", "-o", "json"); code != 0 {
		t.Fatalf("json list: exit %d", code)
	}
	decoded = nil
	if err := json.Unmarshal(h.out.Bytes(), &decoded); err != nil || decoded["kind"] != "List" || len(decoded["items"].([]any)) != 4 {
		t.Fatalf("-o json of every pod is not a v1 List of 4: %v\n%s", err, h.out)
	}
	if code := h.run(t, "get", "pods", "web", "-o", "proto-json"); code != 0 {
		t.Fatalf("proto-json: exit %d", code)
	}
	decoded = nil
	if err := json.Unmarshal(h.out.Bytes(), &decoded); err != nil || decoded["pod"].(map[string]any)["name"] != "web" {
		t.Fatalf("-o proto-json is not the syncpod record: %v\n%s", err, h.out)
	}
	if code := h.run(t, "get", "nodes"); code != 2 {
		t.Fatalf("get nodes: exit %d, want 2", code)
	}
}

func TestDescribeShowsStatusAndEvents(t *testing.T) {
	h := newHarness(t)
	r := record("crash", nil, []*syncpodv1.ContainerStatus{waiting("app", "CrashLoopBackOff", 4)}, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	r.Events = []*syncpodv1.Event{{Type: syncpodv1.EventType_EVENT_TYPE_WARNING, Reason: "BackOff", Message: "Back-off restarting failed container app in pod crash",
		InvolvedContainer: "app", Count: 5, FirstTime: timestamppb.New(now.Add(-3 * time.Minute)), LastTime: timestamppb.New(now.Add(-10 * time.Second))}}
	h.planner.PutPod(r)
	if code := h.run(t, "describe", "pod", "crash"); code != 0 {
		t.Fatalf("exit %d: %s", code, h.err)
	}
	for _, want := range []string{"Name:         crash", "Status:       CrashLoopBackOff", "Reason:     CrashLoopBackOff", "Last State: Terminated", "Restart Count: 4", "BackOff", "10s (x5 over 3m0s)", "[app] Back-off restarting"} {
		if !strings.Contains(h.out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, h.out)
		}
	}
	if code := h.run(t, "describe", "pod", "nosuch"); code != 3 || !strings.Contains(h.err.String(), "NotFound") {
		t.Fatalf("describe missing: exit %d %q", code, h.err)
	}
}

func TestDeletePlanBackoffs(t *testing.T) {
	h := newHarness(t)
	h.planner.PutPod(record("web", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	if code := h.run(t, "delete", "pod", "web", "--grace-period", "5"); code != 0 || h.out.String() != "pod \"web\" deleted\n" {
		t.Fatalf("delete: exit %d %q %q", code, h.out, h.err)
	}
	if g := h.planner.PodDeletes()[0].Request.GracePeriodSeconds; g == nil || *g != 5 {
		t.Fatalf("grace period sent = %v, want 5", g)
	}
	if code := h.run(t, "delete", "pod", "nosuch"); code != 3 {
		t.Fatalf("delete missing: exit %d, want 3", code)
	}

	f := writeFile(t, t.TempDir(), "web.yaml", "name: web\nspec:\n  containers:\n  - {name: a, image: busybox}\n  - {name: b, image: busybox}\n")
	if code := h.run(t, "plan", "-f", f); code != 0 {
		t.Fatalf("plan: exit %d %s", code, h.err)
	}
	wantPlan := "1. kill the pod: a no-op, nothing of it runs yet (the kubelet always kills before a first sandbox, R-2.3)\n" +
		"2. create a sandbox, attempt 0 (no sandbox)\n" +
		"3. start container a: container a starts in a new sandbox\n" +
		"4. start container b: container b starts in a new sandbox\n"
	if h.out.String() != wantPlan {
		t.Fatalf("plan output:\n%s\nwant:\n%s", h.out, wantPlan)
	}
	if h.planner.planReq.GetObserved() != nil {
		t.Fatal("plan without --observed sent an observed state")
	}

	if code := h.run(t, "backoffs", "list"); code != 0 || !strings.Contains(h.out.String(), "default/crash   app         40s     25s") {
		t.Fatalf("backoffs list: exit %d\n%s", code, h.out)
	}
	h.planner.PutPod(record("crash", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	const forgotten = "6f1c2d3e-0000-4000-8000-00000000abcd"
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		uid, container string
	}{
		{"by name with -c", []string{"crash", "-c", "app"}, 0, "uid-crash", "app"},
		{"by uid, container positional", []string{"uid-crash", "app"}, 0, "uid-crash", "app"},
		{"a uid the planner forgot is passed through", []string{forgotten}, 0, forgotten, ""},
		{"unknown name", []string{"nosuch"}, 3, "", ""},
		{"namespace flag after the pod", []string{"crash", "-n", "other"}, 3, "", ""},
	} {
		t.Run("backoffs reset "+tc.name, func(t *testing.T) {
			before := len(h.executor.Requests().Resets)
			code := h.run(t, append([]string{"backoffs", "reset"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %q %q", code, tc.code, h.out, h.err)
			}
			resets := h.executor.Requests().Resets[before:]
			if tc.code != 0 {
				if len(resets) != 0 {
					t.Fatalf("reset sent for a pod that does not exist: %v", resets)
				}
				return
			}
			if len(resets) != 1 {
				t.Fatalf("reset requests %v, want one", resets)
			}
			if reset := resets[0]; h.out.String() != "1 back-off entry cleared\n" || reset.GetPodUid() != tc.uid || reset.GetContainerName() != tc.container {
				t.Fatalf("out %q, reset request %v; want uid %s container %q", h.out, reset, tc.uid, tc.container)
			}
		})
	}
}

func TestLogsOverGRPC(t *testing.T) {
	h := newHarness(t)
	r := record("web", []*syncpodv1.ContainerStatus{{Name: "setup"}}, []*syncpodv1.ContainerStatus{running("app", true, 1), running("side", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	h.planner.PutPod(r)
	t1 := timestamppb.New(now.Add(-time.Minute))
	h.planner.SetLogs("app", &syncpodv1.LogLine{Time: t1, Content: []byte("hello")}, &syncpodv1.LogLine{Time: t1, Content: []byte("oops"), Stream: syncpodv1.LogStream_LOG_STREAM_STDERR})
	h.planner.SetLogs("app/previous", &syncpodv1.LogLine{Time: t1, Content: []byte("first run")})
	h.planner.SetLogs("side", &syncpodv1.LogLine{Time: t1, Content: []byte("side line")}, &syncpodv1.LogLine{Time: t1, Content: []byte("no newline yet"), Partial: true})
	h.planner.SetLogs("setup", &syncpodv1.LogLine{Time: t1, Content: []byte("set up")})
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"-c", []string{"logs", "web", "-c", "app"}, 0, "hello\noops\n"},
		{"container positional", []string{"logs", "pod/web", "side"}, 0, "side line\nno newline yet"},
		{"previous", []string{"logs", "web", "-c", "app", "--previous"}, 0, "first run\n"},
		{"timestamps", []string{"logs", "web", "-c", "setup", "--timestamps"}, 0, "2026-11-21T11:59:00Z set up\n"},
		{"all containers with prefixes", []string{"logs", "web", "--all-containers", "--prefix"}, 0,
			"[pod/web/setup] set up\n[pod/web/app] hello\n[pod/web/app] oops\n[pod/web/side] side line\n[pod/web/side] no newline yet"},
		{"first container by default", []string{"logs", "web"}, 0, "hello\noops\n"},
		{"wrong container", []string{"logs", "web", "-c", "nosuch"}, 3, ""},
		{"unknown pod", []string{"logs", "nosuch", "-c", "app"}, 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code := h.run(t, tc.args...); code != tc.code || h.out.String() != tc.out {
				t.Fatalf("exit %d out %q err %q; want %d %q", code, h.out, h.err, tc.code, tc.out)
			}
		})
	}
	if code := h.run(t, "logs", "web", "-c", "nosuch"); code != 3 || !strings.Contains(h.err.String(), "choose one of [setup app side]") {
		t.Fatalf("wrong container: %q", h.err)
	}
	if code := h.run(t, "logs", "web"); code != 0 || !strings.Contains(h.err.String(), `Defaulted container "app" out of: setup, app, side`) {
		t.Fatalf("default container note: %q", h.err)
	}
	// The request carries the flags.
	if code := h.run(t, "logs", "web", "-c", "app", "-f", "--tail", "3", "--since", "90s"); code != 0 {
		t.Fatalf("exit %d %q", code, h.err)
	}
	req := h.planner.lastLogs()
	if !req.GetFollow() || req.GetTailLines() != 3 || !req.GetSinceTime().AsTime().Equal(now.Add(-90*time.Second)) || req.GetPod().GetName() != "web" {
		t.Fatalf("request %v", req)
	}
	if code := h.run(t, "logs", "web", "-c", "app"); code != 0 || h.planner.lastLogs().TailLines != nil {
		t.Fatalf("without --tail the request must not limit lines: %v", h.planner.lastLogs())
	}
}

func TestUsage(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{nil, 2, "Troubleshooting:"},
		{[]string{"--help"}, 0, "Troubleshooting:"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"get", "pods", "-o", "xml"}, 2, "want wide, name, json, yaml"},
		{[]string{"backoffs", "reset"}, 2, "usage: backoffs reset"},
	}
	for _, tc := range tests {
		h.out.Reset()
		h.err.Reset()
		code := Run(context.Background(), tc.args, h.env)
		if code != tc.code || !strings.Contains(h.out.String()+h.err.String(), tc.out) {
			t.Errorf("%v: exit %d output %q; want %d and %q", tc.args, code, h.out.String()+h.err.String(), tc.code, tc.out)
		}
	}
}
