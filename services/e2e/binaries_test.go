package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binary builds every syncpod binary once per test process and returns the
// path of the named one.
func binary(t *testing.T, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "syncpod-e2e-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/...")
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("building binaries: %v", buildErr)
	}
	return filepath.Join(binDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// proc is a running syncpod binary.
type proc struct {
	cmd     *exec.Cmd
	grpc    string // host:port
	metrics string // http URL of /metrics
	done    chan error
	logs    *strings.Builder
	mu      sync.Mutex
}

// start runs a binary on random loopback ports and waits for its "serving"
// log line, which carries the bound addresses.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	args = append([]string{"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0", "--log-format=json"}, args...)
	cmd := exec.Command(binary(t, name), args...)
	cmd.Env = append(os.Environ(), "SYNCPOD_DATA_DIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1), logs: &strings.Builder{}}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		closed := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct {
				Msg     string `json:"msg"`
				GRPC    string `json:"grpc"`
				Metrics string `json:"metrics"`
			}
			if !closed && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
				p.grpc, p.metrics = rec.GRPC, rec.Metrics
				closed = true
				close(ready)
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	select {
	case <-ready:
	case err := <-p.done:
		t.Fatalf("%s exited before serving: %v\n%s", name, err, p.output())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start serving:\n%s", name, p.output())
	}
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// stop sends SIGTERM and returns the exit error.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGTERM:\n%s", p.output())
		return nil
	}
}

func listServices(t *testing.T, addr string) []string {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		out = append(out, s.GetName())
	}
	return out
}

func TestBinariesServeHealthReflectionAndMetrics(t *testing.T) {
	for _, tc := range []struct {
		binary, service string
		// args are extra flags; unhealthy: the binary has no runtime, so its
		// health must turn NOT_SERVING (the PLEG's ).
		args      []string
		unhealthy bool
	}{
		{binary: "syncpod-planner", service: "syncpod.planner.v1.PlannerService"},
		{binary: "syncpod-executor", service: "syncpod.executor.v1.ExecutorService"},
		{binary: "syncpod-pleg", service: "syncpod.pleg.v1.PlegService", args: []string{"--cri-endpoint=unix:///nonexistent/syncpod-e2e-cri.sock"}, unhealthy: true},
	} {
		t.Run(tc.binary, func(t *testing.T) {
			p := start(t, tc.binary, tc.args...)
			services := strings.Join(listServices(t, p.grpc), " ")
			for _, want := range []string{tc.service, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
				if !strings.Contains(services, want) {
					t.Errorf("reflection lists %q, missing %s", services, want)
				}
			}
			if tc.unhealthy {
				// Without a runtime the PLEG never relists: NOT_SERVING within
				// its health interval (1 s), the reason in the log.
				deadline := time.Now().Add(20 * time.Second)
				for {
					out, err := exec.Command(binary(t, tc.binary), "healthcheck", "--listen="+p.grpc).CombinedOutput()
					if err != nil && strings.Contains(string(out), "NOT_SERVING") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("healthcheck without a runtime: %v: %s", err, out)
					}
					time.Sleep(100 * time.Millisecond)
				}
				if !strings.Contains(p.output(), "pleg has yet to be successful") {
					t.Errorf("no unhealthy reason in the log:\n%s", p.output())
				}
			} else {
				hc := exec.Command(binary(t, tc.binary), "healthcheck", "--listen="+p.grpc)
				if out, err := hc.CombinedOutput(); err != nil || !strings.Contains(string(out), "SERVING") {
					t.Errorf("healthcheck: %v: %s", err, out)
				}
			}
			resp, err := http.Get(p.metrics)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "grpc_server_handled_total") {
				t.Errorf("%s lacks grpc_server_handled_total", p.metrics)
			}
			if err := p.stop(t); err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, p.output())
			}
			if !strings.Contains(p.output(), `"msg":"stopped"`) {
				t.Errorf("no clean stop in the log:\n%s", p.output())
			}
			hc := exec.Command(binary(t, tc.binary), "healthcheck", "--listen="+p.grpc)
			if err := hc.Run(); err == nil {
				t.Error("healthcheck succeeded against a stopped server")
			}
		})
	}
}

func TestBadFlagsExitNonZeroWithReason(t *testing.T) {
	for _, name := range []string{"syncpod-planner", "syncpod-executor", "syncpod-pleg"} {
		for _, tc := range []struct {
			args []string
			env  string
			want string
		}{
			{args: []string{"--no-such-flag"}, want: "no-such-flag"},
			{args: []string{"--listen=http://x"}, want: "--listen"},
			{env: "SYNCPOD_LOG_LEVEL=loud", want: "--log-level"},
		} {
			cmd := exec.Command(binary(t, name), tc.args...)
			cmd.Env = append(os.Environ(), tc.env)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("%s %v %s: err %v, want exit code 2", name, tc.args, tc.env, err)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("%s %v %s: output %q does not mention %q", name, tc.args, tc.env, out, tc.want)
			}
		}
	}
}

func TestPortInUseIsAClearError(t *testing.T) {
	p := start(t, "syncpod-planner")
	cmd := exec.Command(binary(t, "syncpod-executor"), "--listen="+p.grpc, "--metrics-listen=", "--data-dir="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "address already in use") {
		t.Fatalf("second server on %s: %v %s", p.grpc, err, out)
	}
}
