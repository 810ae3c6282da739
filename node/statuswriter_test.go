package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/util/workqueue"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
)

// fakeAPI is one pod on a pretend API server: patches apply to it; the
// first failures patches fail.
type fakeAPI struct {
	mu       sync.Mutex
	pod      *corev1.Pod
	patches  []map[string]any
	failures int
	rv       int
}

func (f *fakeAPI) get(ns, name string) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pod == nil || f.pod.Namespace != ns || f.pod.Name != name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	return f.pod.DeepCopy(), nil
}

func (f *fakeAPI) patch(_ context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures > 0 {
		f.failures--
		return nil, errors.New("etcd is having a moment")
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	if uid := m["metadata"].(map[string]any)["uid"]; uid != string(f.pod.UID) {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, name, errors.New("uid precondition"))
	}
	f.patches = append(f.patches, m)
	cur, _ := json.Marshal(f.pod)
	next, err := strategicpatch.StrategicMergePatch(cur, patch, corev1.Pod{})
	if err != nil {
		return nil, err
	}
	var p corev1.Pod
	if err := json.Unmarshal(next, &p); err != nil {
		return nil, err
	}
	f.rv++
	p.ResourceVersion = strconv.Itoa(f.rv)
	f.pod = &p
	return p.DeepCopy(), nil
}

func restarts(n int32) *syncpodv1.PodStatus {
	return &syncpodv1.PodStatus{
		Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
		ContainerStatuses: []*syncpodv1.ContainerStatus{{Name: "app", RestartCount: n,
			State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Running{Running: &syncpodv1.ContainerStateRunning{}}}}},
	}
}

func newTestWriter(t *testing.T, api *fakeAPI) (*statusWriter, *metrics) {
	t.Helper()
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	return newStatusWriter(q, rate.NewLimiter(rate.Limit(1000), 1), "192.0.2.1", slog.New(slog.NewTextHandler(io.Discard, nil)), m, api.get, api.patch), m
}

func TestStatusWriterWritesTheNewestAfterFailures(t *testing.T) {
	kp := kubeconvtest.APIPod()
	api := &fakeAPI{pod: kp, failures: 2, rv: 1}
	w, m := newTestWriter(t, api)
	key := "team/web"
	// Three statuses before any write: only the newest may land.
	for n := int32(1); n <= 3; n++ {
		w.Set(key, statusSource{uid: kp.UID, planner: restarts(n)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx, 2) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, _ := api.get("team", "web")
		if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("newest status never written; pod status %+v", p.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A change after the write is patched alone: only what changed.
	w.Set(key, statusSource{uid: kp.UID, planner: restarts(4)})
	for {
		p, _ := api.get("team", "web")
		if p.Status.ContainerStatuses[0].RestartCount == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("second status never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.patches) != 2 {
		t.Fatalf("%d patches, want 2 (the newest, then the change): %v", len(api.patches), api.patches)
	}
	last, _ := json.Marshal(api.patches[1]["status"])
	for _, unchanged := range []string{"hostIP", "qosClass", "phase"} {
		if strings.Contains(string(last), unchanged) {
			t.Errorf("second patch %s carries unchanged %s", last, unchanged)
		}
	}
	if got := testutil.ToFloat64(m.statusWrites.WithLabelValues("error")); got != 2 {
		t.Errorf("error writes = %v, want 2", got)
	}
}

func TestStatusWriterDropsStatusOfAnotherIncarnation(t *testing.T) {
	kp := kubeconvtest.APIPod()
	api := &fakeAPI{pod: kp, rv: 1}
	w, _ := newTestWriter(t, api)
	w.Set("team/web", statusSource{uid: types.UID("an-older-uid"), planner: restarts(7)})
	if err := w.sync(context.Background(), "team/web"); err != nil {
		t.Fatal(err)
	}
	if len(api.patches) != 0 {
		t.Errorf("patched another incarnation: %v", api.patches)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) != 0 {
		t.Errorf("stale status kept: %v", w.pending)
	}
}

func TestStatusWriterSkipsAnUnchangedStatus(t *testing.T) {
	kp := kubeconvtest.APIPod()
	api := &fakeAPI{pod: kp, rv: 1}
	w, m := newTestWriter(t, api)
	// The same status twice, each queued by its Set as the agent does.
	for range 2 {
		w.Set("team/web", statusSource{uid: kp.UID, planner: restarts(1)})
		if err := w.sync(context.Background(), "team/web"); err != nil {
			t.Fatal(err)
		}
	}
	if len(api.patches) != 1 {
		t.Errorf("%d patches for one status, want 1", len(api.patches))
	}
	if got := testutil.ToFloat64(m.statusWrites.WithLabelValues("unchanged")); got != 1 {
		t.Errorf("unchanged = %v, want 1", got)
	}
}

// TestStatusWriterSpendsTheBucketOnPatchesOnly: a status already written
// and one of another incarnation send nothing and take no token; each
// patch takes one (here the bucket holds one and never refills, so the
// second patch is refused by it).
func TestStatusWriterSpendsTheBucketOnPatchesOnly(t *testing.T) {
	kp := kubeconvtest.APIPod()
	api := &fakeAPI{pod: kp, rv: 1}
	w, m := newTestWriter(t, api)
	w.limiter = rate.NewLimiter(0, 1)
	// A deadline, however far: the bucket then refuses at once a wait it
	// could never end.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for i := range 3 {
		w.Set("team/web", statusSource{uid: kp.UID, planner: restarts(1)})
		if err := w.sync(ctx, "team/web"); err != nil {
			t.Fatalf("sync %d: %v, want the first patch and then nothing to send", i, err)
		}
	}
	w.Set("team/web", statusSource{uid: types.UID("an-older-uid"), planner: restarts(5)})
	if err := w.sync(ctx, "team/web"); err != nil {
		t.Fatalf("another incarnation: %v, want nothing sent", err)
	}
	if len(api.patches) != 1 || testutil.ToFloat64(m.statusWrites.WithLabelValues("unchanged")) != 2 {
		t.Fatalf("%d patches, %v unchanged; want 1 and 2", len(api.patches), testutil.ToFloat64(m.statusWrites.WithLabelValues("unchanged")))
	}
	w.Set("team/web", statusSource{uid: kp.UID, planner: restarts(2)})
	if err := w.sync(ctx, "team/web"); err == nil || len(api.patches) != 1 {
		t.Errorf("a second patch with the bucket empty: %v, %d patches; want it held by the bucket", err, len(api.patches))
	}
}

// TestStatusWriterReportsTheObservedGeneration. A status of a
// known API generation is written with it as status.observedGeneration and
// on the node's conditions; a status whose generation is not known (of an
// older spec), or an older one, leaves the generation written before.
func TestStatusWriterReportsTheObservedGeneration(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Generation = 3
	kp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: 1}}
	api := &fakeAPI{pod: kp, rv: 1}
	w, _ := newTestWriter(t, api)
	ready := func(n int32) *syncpodv1.PodStatus {
		st := restarts(n)
		st.Conditions = []*syncpodv1.PodCondition{{Type: "Ready", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE}}
		return st
	}
	check := func(step string, want int64) {
		t.Helper()
		if err := w.sync(context.Background(), "team/web"); err != nil {
			t.Fatal(err)
		}
		p, _ := api.get("team", "web")
		if p.Status.ObservedGeneration != want {
			t.Errorf("%s: observedGeneration %d, want %d", step, p.Status.ObservedGeneration, want)
		}
		for _, c := range p.Status.Conditions {
			if c.ObservedGeneration != want {
				t.Errorf("%s: condition %s observedGeneration %d, want %d", step, c.Type, c.ObservedGeneration, want)
			}
		}
	}
	w.Set("team/web", statusSource{uid: kp.UID, planner: ready(0), generation: 3})
	check("a status of generation 3", 3)
	w.Set("team/web", statusSource{uid: kp.UID, planner: ready(1)})
	check("a status of an older spec", 3)
	w.Set("team/web", statusSource{uid: kp.UID, planner: ready(2), generation: 2})
	check("a status of an older generation", 3)
	w.Set("team/web", statusSource{uid: kp.UID, planner: ready(3), generation: 4})
	check("a status of generation 4", 4)
	w.Set("team/web", statusSource{uid: kp.UID, override: &corev1.PodStatus{Phase: corev1.PodFailed, Reason: "UnsupportedPodSpec"}, generation: 5})
	check("a status the agent decided", 5)
}

// TestObservedSourceGeneration: the planner's status is of the API
// generation the planner's pod carries only when it was computed for the
// spec the planner holds.
func TestObservedSourceGeneration(t *testing.T) {
	rec := func(podGen, statusGen int64) *plannerv1.PodRecord {
		return &plannerv1.PodRecord{
			Pod:    &syncpodv1.Pod{Generation: podGen, SourceGeneration: 9},
			Status: &syncpodv1.PodStatus{ObservedGeneration: statusGen},
		}
	}
	if got := observedSourceGeneration(rec(4, 4)); got != 9 {
		t.Errorf("status of the spec held: %d, want 9", got)
	}
	if got := observedSourceGeneration(rec(5, 4)); got != 0 {
		t.Errorf("status of an older spec: %d, want 0 (not known)", got)
	}
}

// A patch's result stands in for the cache only while the cache is behind
// it: once the cache holds it, the writer keeps no copy of the pod.
func TestStatusWriterKeepsThePatchedPodOnlyWhileTheCacheIsBehind(t *testing.T) {
	kp := kubeconvtest.APIPod()
	api := &fakeAPI{pod: kp, rv: 1}
	kp.ResourceVersion = "1"
	stale := kp.DeepCopy()
	var cache atomic.Pointer[corev1.Pod]
	cache.Store(stale)
	w, m := newTestWriter(t, api)
	w.get = func(ns, name string) (*corev1.Pod, error) { return cache.Load().DeepCopy(), nil }
	key := "team/web"
	held := func() *corev1.Pod {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.written[key]
	}

	w.Set(key, statusSource{uid: kp.UID, planner: restarts(1)})
	if err := w.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if held() == nil {
		t.Fatal("the patched pod is not kept while the cache is behind it")
	}
	// The same status again, the cache still behind: answered from the
	// patched pod, nothing sent.
	w.Set(key, statusSource{uid: kp.UID, planner: restarts(1)})
	if err := w.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if len(api.patches) != 1 || testutil.ToFloat64(m.statusWrites.WithLabelValues("unchanged")) != 1 {
		t.Fatalf("%d patches, %v unchanged; want 1 and 1", len(api.patches), testutil.ToFloat64(m.statusWrites.WithLabelValues("unchanged")))
	}

	w.cached(stale) // an older update arriving late changes nothing
	if held() == nil {
		t.Fatal("the patched pod was dropped for an older cached copy")
	}
	now, _ := api.get("team", "web")
	cache.Store(now)
	w.cached(now)
	if p := held(); p != nil {
		t.Errorf("the patched pod (resourceVersion %s) is kept after the cache caught up", p.ResourceVersion)
	}

	// A patch whose result the cache already holds keeps no copy.
	w.Set(key, statusSource{uid: kp.UID, planner: restarts(2)})
	w.get = api.get
	if err := w.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if len(api.patches) != 2 {
		t.Fatalf("%d patches, want 2", len(api.patches))
	}
	if p := held(); p != nil {
		t.Errorf("the patched pod (resourceVersion %s) is kept with the cache as new", p.ResourceVersion)
	}
}

// A status the API server holds is not kept: only the next Set queues the
// pod again. One replaced while it was being written stays for its own
// write.
func TestStatusWriterKeepsNoStatusOnceWritten(t *testing.T) {
	kp := kubeconvtest.APIPod()
	api := &fakeAPI{pod: kp, rv: 1}
	w, _ := newTestWriter(t, api)
	key := "team/web"
	pending := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.pending)
	}
	w.Set(key, statusSource{uid: kp.UID, planner: restarts(1)})
	if err := w.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 0 {
		t.Errorf("%d statuses kept after the write, want 0", n)
	}
	w.Set(key, statusSource{uid: kp.UID, planner: restarts(1)})
	if err := w.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 0 {
		t.Errorf("%d statuses kept, found written already, want 0", n)
	}

	// A newer status arriving while the older one is being written.
	api.mu.Lock()
	api.failures = 0
	api.mu.Unlock()
	w.Set(key, statusSource{uid: kp.UID, planner: restarts(2)})
	patch := w.patch
	w.patch = func(ctx context.Context, ns, name string, p []byte) (*corev1.Pod, error) {
		w.Set(key, statusSource{uid: kp.UID, planner: restarts(3)})
		return patch(ctx, ns, name, p)
	}
	if err := w.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	w.patch = patch
	if n := pending(); n != 1 {
		t.Fatalf("%d statuses pending, want the newer one", n)
	}
	if err := w.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	p, _ := api.get("team", "web")
	if got := p.Status.ContainerStatuses[0].RestartCount; got != 3 {
		t.Errorf("restart count %d written, want 3", got)
	}
}
