package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/syncpod/syncpod/internal/buildtags"
	"github.com/syncpod/syncpod/node/kubeconv"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// benchManifest is the pod the bench rows apply with syncpodctl.
const benchManifest = `apiVersion: v1
kind: Pod
metadata:
  name: bench
  namespace: default
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    imagePullPolicy: Never
    command: ["sh", "-c", "while true; do sleep 1; done"]
`

// arrivals is a planner that only notes when each ApplyPod arrives.
type arrivals struct {
	plannerv1.UnimplementedPlannerServiceServer
	seen chan time.Time
}

func (a *arrivals) ApplyPod(_ context.Context, req *plannerv1.ApplyPodRequest) (*plannerv1.ApplyPodResponse, error) {
	a.seen <- time.Now()
	return &plannerv1.ApplyPodResponse{Pod: req.GetPod(), Result: plannerv1.ApplyResult_APPLY_RESULT_CREATED}, nil
}

// buildStatic builds pkg as make build does (static, stripped) into dir.
func buildStatic(b *testing.B, dir, name, pkg string) string {
	b.Helper()
	out := filepath.Join(dir, name)
	tags, err := buildtags.Static(".")
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-tags="+tags, "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// BenchmarkApplyExec times `syncpodctl apply -f pod.yaml` from exec until
// its ApplyPod request reaches a planner on a unix socket, against the
// floor measured in the same run, alternating: a process that only dials
// and sends the same request. It reports both and their ratio; each op
// is one of each.
func BenchmarkApplyExec(b *testing.B) {
	dir := b.TempDir()
	ctl := buildStatic(b, dir, "syncpodctl", ".")
	floor := buildStatic(b, dir, "applyfloor", "./testdata/applyfloor")

	manifest := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(manifest, []byte(benchManifest), 0o600); err != nil {
		b.Fatal(err)
	}
	js, err := yaml.YAMLToJSON([]byte(benchManifest))
	if err != nil {
		b.Fatal(err)
	}
	pod, _, err := kubeconv.ConvertManifest(js)
	if err != nil {
		b.Fatal(err)
	}
	req, err := proto.Marshal(&plannerv1.ApplyPodRequest{Pod: pod})
	if err != nil {
		b.Fatal(err)
	}
	reqFile := filepath.Join(dir, "request.pb")
	if err := os.WriteFile(reqFile, req, 0o600); err != nil {
		b.Fatal(err)
	}

	sock := filepath.Join(dir, "planner.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	planner := &arrivals{seen: make(chan time.Time, 1)}
	plannerv1.RegisterPlannerServiceServer(srv, planner)
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)

	// A clean environment: no config file, no SYNCPOD_ variables.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	target := "unix://" + sock
	once := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case at := <-planner.seen:
			if err := <-done; err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			return at.Sub(start)
		case err := <-done:
			b.Fatalf("%s exited (%v) before its request arrived", name, err)
		}
		return 0
	}
	var ctlTimes, floorTimes []time.Duration
	for b.Loop() { // b.Loop: the builds above run once, not at every b.N
		ctlTimes = append(ctlTimes, once(ctl, "--server", target, "apply", "-f", manifest))
		floorTimes = append(floorTimes, once(floor, target, reqFile))
	}
	c, f := median(ctlTimes), median(floorTimes)
	b.ReportMetric(float64(c.Microseconds())/1000, "ctl-ms")
	b.ReportMetric(float64(f.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(c)/float64(f), "ctl/floor")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
