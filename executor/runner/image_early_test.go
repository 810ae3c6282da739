package runner

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// sandboxWaitsForImages is a runtime whose RunPodSandbox waits (up to
// 5 s) until want image statuses have been asked for, and records whether
// they were: it proves the reads overlap the sandbox's creation.
type sandboxWaitsForImages struct {
	*critest.Runtime
	imgs       *countingImages
	want       int
	overlapped bool
}

func (r *sandboxWaitsForImages) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.overlapped = r.imgs.waitFor(r.want, 5*time.Second)
	return r.Runtime.RunPodSandbox(ctx, cfg, handler)
}

// countingImages counts ImageStatus calls by image, each answered after
// delay.
type countingImages struct {
	*critest.Images
	delay time.Duration
	mu    sync.Mutex
	asked map[string]int
	cond  *sync.Cond
}

func newCountingImages(delay time.Duration, images ...string) *countingImages {
	c := &countingImages{Images: critest.NewImages(images...), delay: delay, asked: map[string]int{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *countingImages) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	c.mu.Lock()
	c.asked[image.GetImage()]++
	c.cond.Broadcast()
	c.mu.Unlock()
	time.Sleep(c.delay)
	return c.Images.ImageStatus(ctx, image, verbose)
}

func (c *countingImages) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.totalLocked()
}

func (c *countingImages) totalLocked() int {
	n := 0
	for _, v := range c.asked {
		n += v
	}
	return n
}

func (c *countingImages) count(image string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[image]
}

// waitFor reports whether n statuses were asked for within d.
func (c *countingImages) waitFor(n int, d time.Duration) bool {
	timer := time.AfterFunc(d, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.totalLocked() >= n {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		c.cond.Wait()
	}
}

// earlyEnv is newEnv with rt and imgs in place of the fake runtime and
// image service.
func earlyEnv(t *testing.T, rt func(*critest.Runtime) internalapi.RuntimeService, imgs *countingImages) (*Runner, *critest.Runtime) {
	t.Helper()
	base := newEnv(t)
	reg := prometheus.NewRegistry()
	cm, err := runtimeclient.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{
		Runtime: runtimeclient.NewRuntime(rt(base.rt), cm, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(imgs, cm, runtimeclient.Timeouts{}),
		Backoff: base.store, Clock: base.clock, LogDir: base.logDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, base.rt
}

// TestR8ImageStatusReadWhileTheSandboxIsCreated: a new pod's images are
// looked up while RunPodSandbox runs (each distinct image once, Always
// never), and the starts still go in R-8's order with the decisions those
// reads give; a second container of an image reads it again.
func TestR8ImageStatusReadWhileTheSandboxIsCreated(t *testing.T) {
	const other = "registry.example/other:2"
	imgs := newCountingImages(0, busybox, other)
	var rt *sandboxWaitsForImages
	r, _ := earlyEnv(t, func(base *critest.Runtime) internalapi.RuntimeService {
		rt = &sandboxWaitsForImages{Runtime: base, imgs: imgs, want: 2}
		return rt
	}, imgs)
	always := ctr("d")
	always.Image, always.ImagePullPolicy = busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS
	c := ctr("c")
	c.Image = other
	pod := testPod(nil, ctr("a"), ctr("b"), c, always)
	resp, err := r.ApplyActions(context.Background(), pod, nil, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: starts("a", "b", "c", "d")})
	if err != nil {
		t.Fatal(err)
	}
	if !rt.overlapped {
		t.Fatalf("RunPodSandbox waited 5 s and the two images' statuses were not asked for meanwhile (asked %v)", imgs.asked)
	}
	sb := resp.GetSandboxId()
	want := "KILL_POD demo SUCCEEDED\nCREATE_SANDBOX " + sb + " SUCCEEDED\n" +
		"PULL_IMAGE a SUCCEEDED\nSTART_CONTAINER a SUCCEEDED\nPULL_IMAGE b SUCCEEDED\nSTART_CONTAINER b SUCCEEDED\n" +
		"PULL_IMAGE c SUCCEEDED\nSTART_CONTAINER c SUCCEEDED\nPULL_IMAGE d SUCCEEDED\nSTART_CONTAINER d SUCCEEDED\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	// busybox: early for a, again for b; d (Always) pulls and its config
	// reads it once more after the pull. other: early for c only.
	if n := imgs.count(busybox); n != 3 {
		t.Fatalf("%d status reads of %s, want 3 (a early, b, d after its pull)", n, busybox)
	}
	if n := imgs.count(other); n != 1 {
		t.Fatalf("%d status reads of %s, want 1 (early, taken by c)", n, other)
	}
	if pulls := critest.ImageCalls(imgs.Images); slices.Index(pulls, "PullImage") < 0 {
		t.Fatalf("d (Always) did not pull: %v", pulls)
	}
	// The response's timeline carries the early reads, ordered by start:
	// both begin before RunPodSandbox ends.
	var sandboxEnd time.Time
	var early int
	for _, c := range resp.GetCriCalls() {
		if c.GetOperation() == runtimeclient.OpRunPodSandbox {
			sandboxEnd = c.GetStartedAt().AsTime().Add(c.GetDuration().AsDuration())
		}
	}
	for _, c := range resp.GetCriCalls() {
		if c.GetOperation() == runtimeclient.OpImageStatus && c.GetStartedAt().AsTime().Before(sandboxEnd) {
			early++
		}
	}
	if early != 2 {
		t.Fatalf("%d image status calls began before RunPodSandbox ended, want 2: %v", early, resp.GetCriCalls())
	}
}

// TestR8EarlyReadOfAMissingImagePullsOnce: two containers of an absent
// IfNotPresent image; the first pulls after the sandbox, the second reads
// the image again and finds it, as with the kubelet (one pull, not two).
func TestR8EarlyReadOfAMissingImagePullsOnce(t *testing.T) {
	imgs := newCountingImages(0)
	r, _ := earlyEnv(t, func(base *critest.Runtime) internalapi.RuntimeService { return base }, imgs)
	pod := testPod(nil, ctr("a"), ctr("b"))
	resp, err := r.ApplyActions(context.Background(), pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	want := "CREATE_SANDBOX " + resp.GetSandboxId() + " SUCCEEDED\nPULL_IMAGE a SUCCEEDED\nSTART_CONTAINER a SUCCEEDED\nPULL_IMAGE b SUCCEEDED\nSTART_CONTAINER b SUCCEEDED\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	var pulls int
	for _, c := range critest.ImageCalls(imgs.Images) {
		if c == "PullImage" {
			pulls++
		}
	}
	if pulls != 1 {
		t.Fatalf("%d pulls, want 1: %v", pulls, critest.ImageCalls(imgs.Images))
	}
	for _, s := range resp.GetSteps() {
		if s.GetTarget() == "b" && s.GetStep() == executorv1.Step_STEP_PULL_IMAGE && s.GetMessage() != `Container image "`+busybox+`" already present on machine` {
			t.Fatalf("b's pull step says %q, want the image already present", s.GetMessage())
		}
	}
}

// TestR8FailedEarlyReadIsAskedAgainAtItsTurn: an early read that fails
// decides nothing; the container's own read at its turn does.
func TestR8FailedEarlyReadIsAskedAgainAtItsTurn(t *testing.T) {
	imgs := newCountingImages(0, busybox)
	r, _ := earlyEnv(t, func(base *critest.Runtime) internalapi.RuntimeService { return base }, imgs)
	imgs.InjectError("ImageStatus", status.Error(codes.Unknown, "image store busy"))
	pod := testPod(nil, ctr("a"))
	resp, err := r.ApplyActions(context.Background(), pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("a")})
	if err != nil {
		t.Fatal(err)
	}
	want := "CREATE_SANDBOX " + resp.GetSandboxId() + " SUCCEEDED\nPULL_IMAGE a SUCCEEDED\nSTART_CONTAINER a SUCCEEDED\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	if n := imgs.total(); n != 2 {
		t.Fatalf("%d image status reads, want 2 (the failed early one, then a's own)", n)
	}
	if slices.Contains(critest.ImageCalls(imgs.Images), "PullImage") {
		t.Fatalf("pulled a present image: %v", critest.ImageCalls(imgs.Images))
	}
}

// TestR8EarlyReadEndsWithThePassWhenTheSandboxFails: a sandbox that cannot
// be created skips the starts (R-8 step 4), and the early read has ended
// by the time ApplyActions returns, though no start took it.
func TestR8EarlyReadEndsWithThePassWhenTheSandboxFails(t *testing.T) {
	imgs := newCountingImages(100*time.Millisecond, busybox)
	r, rt := earlyEnv(t, func(base *critest.Runtime) internalapi.RuntimeService { return base }, imgs)
	rt.InjectError("RunPodSandbox", status.Error(codes.Unknown, "no space left"))
	pod := testPod(nil, ctr("a"))
	resp, err := r.ApplyActions(context.Background(), pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("a")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(resp), "CREATE_SANDBOX  FAILED CreatePodSandboxError\nSTART_CONTAINER a SKIPPED\n"; got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	var ended bool
	for _, c := range resp.GetCriCalls() {
		ended = ended || c.GetOperation() == runtimeclient.OpImageStatus
	}
	if !ended {
		t.Fatalf("the early image read had not ended when the pass returned: calls %v", resp.GetCriCalls())
	}
}
