package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/syncpod/syncpod/planner/plannertest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// fakeReadPlanner is the fake planner holding pod default/web (container
// app) and static pod kube-system/etcd (container etcd), each with the
// ephemeral container debugger, every container's log (the current and
// the previous instance's) being lines. Its exec echoes stdin to stdout
// and "err" to stderr, exiting with the command's first word as exit
// code when it is a number; its attach says what it attached to.
type fakeReadPlanner struct{ *plannertest.Planner }

func newReadPlanner(lines ...*syncpodv1.LogLine) fakeReadPlanner {
	f := fakeReadPlanner{&plannertest.Planner{}}
	for _, p := range []struct{ ns, name, container string }{{"default", "web", "app"}, {"kube-system", "etcd", "etcd"}} {
		f.PutPod(&plannerv1.PodRecord{Pod: &syncpodv1.Pod{Namespace: p.ns, Name: p.name,
			Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: p.container}},
				EphemeralContainers: []*syncpodv1.Container{{Name: "debugger"}}},
		}})
		for _, c := range []string{p.container, p.container + "/previous", "debugger", "debugger/previous"} {
			f.SetLogs(c, lines...)
		}
	}
	return f
}

func (f fakeReadPlanner) Exec(s grpc.BidiStreamingServer[plannerv1.ExecRequest, plannerv1.ExecResponse]) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start.GetContainer() != "app" {
		return status.Errorf(codes.NotFound, "container %q not found", start.GetContainer())
	}
	out := func(o *syncpodv1.StreamOutput) error { return s.Send(&plannerv1.ExecResponse{Output: o}) }
	if err := out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stderr{Stderr: []byte("err\n")}}); err != nil {
		return err
	}
	for start.GetStdin() {
		in, err := s.Recv()
		if err != nil || in.GetInput().GetStdinClosed() {
			break
		}
		if err := out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stdout{Stdout: in.GetInput().GetStdin()}}); err != nil {
			return err
		}
	}
	code := int32(0)
	if len(start.GetCommand()) > 0 {
		var n int32
		for _, c := range start.GetCommand()[0] {
			if c < '0' || c > '9' {
				n = 0
				break
			}
			n = n*10 + c - '0'
		}
		code = n
	}
	return out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_ExitCode{ExitCode: code}})
}

func (f fakeReadPlanner) Attach(s grpc.BidiStreamingServer[plannerv1.AttachRequest, plannerv1.AttachResponse]) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	msg := "attached to " + first.GetStart().GetPod().GetName() + "/" + first.GetStart().GetContainer() + "\n"
	return s.Send(&plannerv1.AttachResponse{Output: &syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stdout{Stdout: []byte(msg)}}})
}

// readAPIServer serves the read API over plain HTTP for tests; user, when
// set, is the client certificate the TLS layer would have verified.
func readAPIServer(t *testing.T, f fakeReadPlanner, user string, allowed []string) *httptest.Server {
	t.Helper()
	h, err := NewReadAPI(ReadAPIOptions{
		Planner: plannerClient(t, f),
		Pods: func() ([]*corev1.Pod, error) {
			return []*corev1.Pod{
				{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api"}},
			}, nil
		},
		StaticName: func(ns, name string) (string, bool) {
			base, ok := strings.CutSuffix(name, "-node1")
			return base, ok
		},
		AuthorizedUsers: allowed,
		Logger:          slog.New(slog.DiscardHandler),
		Now:             func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user != "" {
			cert := &x509.Certificate{Subject: pkix.Name{CommonName: user, Organization: []string{"ops"}}}
			r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReadAPIAuthentication(t *testing.T) {
	f := newReadPlanner()
	for _, tc := range []struct {
		name, user string
		allowed    []string
		path       string
		want       int
	}{
		{"no client certificate", "", nil, "/pods", http.StatusUnauthorized},
		{"no client certificate, healthz is open", "", nil, "/healthz", http.StatusOK},
		{"any verified user when none are listed", "someone", nil, "/pods", http.StatusOK},
		{"listed user", "kube-apiserver-kubelet-client", []string{"kube-apiserver-kubelet-client"}, "/pods", http.StatusOK},
		{"listed group", "alice", []string{"ops"}, "/pods", http.StatusOK},
		{"unlisted user", "mallory", []string{"kube-apiserver-kubelet-client"}, "/pods", http.StatusForbidden},
		{"no client certificate, resource metrics", "", nil, "/metrics/resource", http.StatusUnauthorized},
		{"unlisted user, stats summary", "mallory", []string{"kube-apiserver-kubelet-client"}, "/stats/summary", http.StatusForbidden},
		{"unlisted user, exec", "mallory", []string{"kube-apiserver-kubelet-client"}, "/exec/default/web/app?command=ls&output=1", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := readAPIServer(t, f, tc.user, tc.allowed)
			if code, body := get(t, srv.URL+tc.path); code != tc.want {
				t.Errorf("GET %s: %d %q, want %d", tc.path, code, body, tc.want)
			}
		})
	}
}

func TestReadAPIPodsListsBoundPodsSorted(t *testing.T) {
	srv := readAPIServer(t, newReadPlanner(), "admin", nil)
	code, body := get(t, srv.URL+"/pods")
	if code != http.StatusOK || !strings.Contains(body, `"kind":"PodList"`) ||
		strings.Index(body, `"name":"api"`) > strings.Index(body, `"name":"web"`) || !strings.Contains(body, `"name":"web"`) {
		t.Errorf("/pods: %d %s", code, body)
	}
}

func TestReadAPIContainerLogs(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 0, 0, 500, time.UTC)
	f := newReadPlanner(
		&syncpodv1.LogLine{Time: timestamppb.New(at), Stream: syncpodv1.LogStream_LOG_STREAM_STDOUT, Content: []byte("one")},
		&syncpodv1.LogLine{Time: timestamppb.New(at), Stream: syncpodv1.LogStream_LOG_STREAM_STDERR, Content: []byte("two")},
		&syncpodv1.LogLine{Time: timestamppb.New(at), Stream: syncpodv1.LogStream_LOG_STREAM_STDOUT, Content: []byte("thr"), Partial: true},
	)
	srv := readAPIServer(t, f, "admin", nil)
	for _, tc := range []struct {
		name, query string
		want        int
		body        string
	}{
		{"all lines, partial last line without newline", "", 200, "one\ntwo\nthr"},
		{"timestamps", "?timestamps=true", 200, "2026-01-02T03:00:00.0000005Z one\n2026-01-02T03:00:00.0000005Z two\n2026-01-02T03:00:00.0000005Z thr"},
		{"limitBytes cuts a line", "?limitBytes=6", 200, "one\ntw"},
		{"stdout only", "?stream=Stdout", 200, "one\nthr"},
		{"stderr only", "?stream=Stderr", 200, "two\n"},
		{"bad tailLines", "?tailLines=-1", 400, "tailLines"},
		{"bad limitBytes and follow at once", "?limitBytes=0&follow=maybe", 400, "follow"},
		{"sinceSeconds with sinceTime", "?sinceSeconds=5&sinceTime=2026-01-02T03:04:00Z", 400, "at most one"},
		{"bad stream", "?stream=Both", 400, "stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, srv.URL+"/containerLogs/default/web/app"+tc.query)
			if code != tc.want || (code == 200 && body != tc.body) || (code != 200 && !strings.Contains(body, tc.body)) {
				t.Errorf("%d %q, want %d %q", code, body, tc.want, tc.body)
			}
		})
	}
	t.Run("query reaches the planner", func(t *testing.T) {
		code, _ := get(t, srv.URL+"/containerLogs/default/web/app?follow=true&previous=1&tailLines=7&sinceSeconds=5")
		if code != 200 {
			t.Fatalf("status %d", code)
		}
		reqs := f.LogRequests()
		r := reqs[len(reqs)-1]
		if !r.GetFollow() || !r.GetPrevious() || r.GetTailLines() != 7 || r.GetContainer() != "app" ||
			!r.GetSinceTime().AsTime().Equal(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)) {
			t.Errorf("planner request: %v", r)
		}
	})
	t.Run("mirror pod name reads its static pod", func(t *testing.T) {
		if code, body := get(t, srv.URL+"/containerLogs/kube-system/etcd-node1/etcd"); code != 200 || body != "one\ntwo\nthr" {
			t.Errorf("%d %q", code, body)
		}
	})
	t.Run("R-6.4 an ephemeral container's logs", func(t *testing.T) {
		if code, body := get(t, srv.URL+"/containerLogs/default/web/debugger"); code != 200 || body != "one\ntwo\nthr" {
			t.Errorf("%d %q", code, body)
		}
	})
	t.Run("unknown pod is 404", func(t *testing.T) {
		if code, _ := get(t, srv.URL+"/containerLogs/default/nosuch/app"); code != http.StatusNotFound {
			t.Errorf("status %d", code)
		}
	})
	t.Run("unknown container is 400", func(t *testing.T) {
		if code, body := get(t, srv.URL+"/containerLogs/default/web/nosuch"); code != http.StatusBadRequest || !strings.Contains(body, "nosuch") {
			t.Errorf("%d %q", code, body)
		}
	})
}

// TestReadAPIExecOverSPDY runs exec with client-go's SPDY executor, as the
// API server does: output, standard input and the exit code come through.
func TestReadAPIExecOverSPDY(t *testing.T) {
	srv := readAPIServer(t, newReadPlanner(), "admin", nil)
	exec := func(t *testing.T, path, cmd string, stdin io.Reader) (string, string, error) {
		t.Helper()
		q := url.Values{"command": {cmd, "x"}, "output": {"1"}, "error": {"1"}}
		if stdin != nil {
			q.Set("input", "1")
		}
		u, _ := url.Parse(srv.URL + path + "?" + q.Encode())
		ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: &errb})
		return out.String(), errb.String(), err
	}
	t.Run("stdin echoed, exit 0", func(t *testing.T) {
		out, errs, err := exec(t, "/exec/default/web/app", "0", strings.NewReader("hello\n"))
		if err != nil || out != "hello\n" || errs != "err\n" {
			t.Errorf("out %q err %q: %v", out, errs, err)
		}
	})
	t.Run("exit code 3", func(t *testing.T) {
		_, _, err := exec(t, "/exec/default/web/app", "3", nil)
		var ee utilexec.ExitError
		if !errors.As(err, &ee) || ee.ExitStatus() != 3 {
			t.Errorf("err = %v, want exit code 3", err)
		}
	})
	t.Run("path with uid", func(t *testing.T) {
		if _, _, err := exec(t, "/exec/default/web/some-uid/app", "0", nil); err != nil {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("container error reported", func(t *testing.T) {
		_, _, err := exec(t, "/exec/default/web/nosuch", "0", nil)
		if err == nil || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("err = %v, want the planner's error", err)
		}
	})
	t.Run("unknown pod is 404 before the upgrade", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/exec/default/nosuch/app?command=ls&output=1", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}

func TestReadAPIAttachOverSPDY(t *testing.T) {
	srv := readAPIServer(t, newReadPlanner(), "admin", nil)
	u, _ := url.Parse(srv.URL + "/attach/kube-system/etcd-node1/etcd?output=1&error=1")
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb}); err != nil {
		t.Fatal(err)
	}
	// The mirror pod's name reached the static pod.
	if out.String() != "attached to etcd/etcd\n" {
		t.Errorf("attach output %q", out.String())
	}
}

func TestHTTPStatusOfPlannerErrors(t *testing.T) {
	for _, tc := range []struct {
		code codes.Code
		want int
	}{
		{codes.NotFound, 404}, {codes.InvalidArgument, 400}, {codes.OutOfRange, 400},
		{codes.FailedPrecondition, 409}, {codes.Unavailable, 503}, {codes.DeadlineExceeded, 504},
		{codes.PermissionDenied, 403}, {codes.Unimplemented, 501}, {codes.Internal, 500}, {codes.Unknown, 500},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			if got := httpStatus(status.Error(tc.code, "x")); got != tc.want {
				t.Errorf("httpStatus(%s) = %d, want %d", tc.code, got, tc.want)
			}
		})
	}
	if got := httpStatus(errors.New("plain")); got != 500 {
		t.Errorf("httpStatus(plain error) = %d, want 500", got)
	}
}

func TestNodeStatusPublishesKubeletPort(t *testing.T) {
	st := NodeStatus(Host{KubeletPort: 10250, InternalIP: "127.0.0.1"}, true, "", Pressure{}, nil, time.Unix(0, 0))
	if st.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("daemonEndpoints = %+v", st.DaemonEndpoints)
	}
}
