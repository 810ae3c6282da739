package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/syncpod/syncpod/internal/buildtags"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	// ownBinDir: binDir was made by this process, which removes it.
	ownBinDir bool
)

// envBinDir names a directory of binaries another test process built, to
// use instead of building them again.
const envBinDir = "SYNCPOD_E2E_BIN_DIR"

// envRaceServices asks for every service binary built with -race.
const envRaceServices = "SYNCPOD_TEST_RACE_SERVICES"

// raceBuilt are the binaries built with -race by default: the node agent
// alone, since its dependency graph (client-go) is compiled with -race
// for its own unit tests and for nothing else in `make test`.
var raceBuilt = map[string]bool{"syncpod-node": true}

// binary builds every syncpod binary once per test process and returns the
// path of the named one.
//
// They are built as users get them (`make build`: static, -trimpath, its
// tags), so they share the packages `make test`'s set-up compiled for
// `make run` and the images, and run at their real speed: built with
// -race, the services cost the end-to-end tests about twice the CPU, which
// on two cores is most of their time. The race detector covers them in their packages'
// own tests (go test -race) and here in the node agent; with
// SYNCPOD_TEST_RACE_SERVICES=1 every binary is built with -race, and a
// data race any of them reports fails the test that met it.
func binary(t *testing.T, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		if dir := os.Getenv(envBinDir); dir != "" {
			binDir = dir
			return
		}
		binDir, buildErr = os.MkdirTemp("", "syncpod-e2e-bin-")
		if buildErr != nil {
			return
		}
		ownBinDir = true
		allRace := os.Getenv(envRaceServices) == "1"
		var static, race []string
		entries, err := os.ReadDir("../cmd")
		if err != nil {
			buildErr = err
			return
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == "internal" {
				continue // the mains' shared bodies, no binary
			}
			if allRace || raceBuilt[e.Name()] {
				race = append(race, "./cmd/"+e.Name())
			} else {
				static = append(static, "./cmd/"+e.Name())
			}
		}
		// No DWARF: less to link, and nothing reads it.
		build := func(env []string, args ...string) error {
			cmd := exec.Command("go", append([]string{"build", "-o", binDir + "/"}, args...)...)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return nil
		}
		var errs []error
		if len(static) > 0 {
			tags, err := buildtags.Static("..")
			if err != nil {
				buildErr = err
				return
			}
			errs = append(errs, build([]string{"CGO_ENABLED=0"}, append([]string{"-trimpath", "-tags=" + tags, "-ldflags=-s -w"}, static...)...))
		}
		if len(race) > 0 {
			errs = append(errs, build(nil, append([]string{"-race", "-ldflags=-w"}, race...)...))
		}
		buildErr = errors.Join(errs...)
	})
	if buildErr != nil {
		t.Fatalf("building binaries: %v", buildErr)
	}
	return filepath.Join(binDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ownBinDir {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func listServices(t *testing.T, addr string) []string {
	t.Helper()
	conn := dial(t, addr)
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
			for _, want := range []string{tc.service, "syncpod.v1.VersionService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
				if !strings.Contains(services, want) {
					t.Errorf("reflection lists %q, missing %s", services, want)
				}
			}
			if tc.unhealthy {
				// Without a runtime the PLEG never relists: NOT_SERVING within
				// its health interval (1 s), the reason in the log.
				deadline := time.Now().Add(20 * time.Second)
				for {
					out, err := exec.Command(binary(t, tc.binary), "healthcheck", "--listen="+target(p.grpc)).CombinedOutput()
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
				hc := exec.Command(binary(t, tc.binary), "healthcheck", "--listen="+target(p.grpc))
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
			hc := exec.Command(binary(t, tc.binary), "healthcheck", "--listen="+target(p.grpc))
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
			{args: []string{"--listen=127.0.0.1:0"}, want: "--insecure-tcp"},
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

// TestPortInUseIsAClearError: on TCP, asked for explicitly.
func TestPortInUseIsAClearError(t *testing.T) {
	p := start(t, "syncpod-planner", "--listen=127.0.0.1:0", "--insecure-tcp")
	cmd := exec.Command(binary(t, "syncpod-executor"), "--listen="+p.grpc, "--insecure-tcp", "--metrics-listen=", "--data-dir="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "address already in use") {
		t.Fatalf("second server on %s: %v %s", p.grpc, err, out)
	}
	if !strings.Contains(p.output(), "INSECURE: serving plaintext TCP") {
		t.Errorf("no warning about --insecure-tcp at start:\n%s", p.output())
	}
}

// TestSocketsRefuseOtherUsers: a service's default listener, a unix
// socket of mode 0660, refuses a user who is neither its owner nor in its
// group (--socket-group), even when the directory lets everyone through;
// a member of the group is served.
func TestSocketsRefuseOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test switches to the user nobody with setpriv")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	// A directory everyone may pass through, holding a copy of syncpodctl
	// everyone may run: only the socket's own mode stands in the way.
	dir, err := os.MkdirTemp("", "spu-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctlBin, err := os.ReadFile(binary(t, "syncpodctl"))
	if err != nil {
		t.Fatal(err)
	}
	ctlPath := filepath.Join(dir, "syncpodctl")
	if err := os.WriteFile(ctlPath, ctlBin, 0o755); err != nil {
		t.Fatal(err)
	}
	const group = "4242" // a group nobody is not in
	sock := filepath.Join(dir, "planner.sock")
	start(t, "syncpod-planner", "--listen=unix://"+sock, "--socket-group="+group)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, want 0660", fi.Mode().Perm())
	}
	list := []string{ctlPath, "--server=unix://" + sock, "--config=/dev/null", "get", "pods"}
	for _, tc := range []struct {
		name   string
		prefix []string // how the command is run
		ok     bool
	}{
		{name: "the owner", ok: true},
		{name: "nobody", prefix: []string{setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"}},
		{name: "nobody in the socket's group", prefix: []string{setpriv, "--reuid=nobody", "--regid=" + group, "--clear-groups"}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, tc.prefix...), list...)
			out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
			switch {
			case tc.ok && err != nil:
				t.Errorf("%v: %v\n%s", args, err, out)
			case !tc.ok && err == nil:
				t.Errorf("%v succeeded:\n%s", args, out)
			case !tc.ok && !strings.Contains(string(out), "permission denied"):
				t.Errorf("%v: output does not say permission denied:\n%s", args, out)
			}
		})
	}
}
