package node

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// admitPlanner is a planner that holds no pod: GetPod answers getErr (or
// NotFound), ApplyPod validates the pod as the planner does.
type admitPlanner struct {
	plannerv1.PlannerServiceClient
	mu      sync.Mutex
	getErr  error
	gets    int
	applies int
}

func (p *admitPlanner) GetPod(context.Context, *plannerv1.GetPodRequest, ...grpc.CallOption) (*plannerv1.GetPodResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets++
	if p.getErr != nil {
		return nil, p.getErr
	}
	return nil, status.Error(codes.NotFound, "no such pod")
}

func (p *admitPlanner) ApplyPod(_ context.Context, req *plannerv1.ApplyPodRequest, _ ...grpc.CallOption) (*plannerv1.ApplyPodResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applies++
	if err := validation.Pod(req.GetPod()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &plannerv1.ApplyPodResponse{Result: plannerv1.ApplyResult_APPLY_RESULT_CREATED}, nil
}

// admissionAgent is an agent with pods in its lister, the planner p, a
// fake event recorder and a status writer whose writes stay pending.
func admissionAgent(t *testing.T, p plannerv1.PlannerServiceClient, pods ...*corev1.Pod) (*Agent, *record.FakeRecorder, cache.Indexer) {
	t.Helper()
	a, err := New(Options{Client: &Client{}, Planner: p, NodeName: "n1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, kp := range pods {
		if err := idx.Add(kp); err != nil {
			t.Fatal(err)
		}
	}
	a.lister = corelisters.NewPodLister(idx)
	a.services = corelisters.NewServiceLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))
	rec := record.NewFakeRecorder(100)
	a.recorder = rec
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	t.Cleanup(q.ShutDown)
	a.status = newStatusWriter(q, nil, "", a.o.Logger, a.m, nil, nil)
	a.cfg = newConfigs(t.Context(), a)
	return a, rec, idx
}

// tokenlessAPIPod is kubeconvtest.APIPod without its service account
// token volume (whose CA ConfigMap and token need an API server), for
// tests of admission.
func tokenlessAPIPod() *corev1.Pod {
	kp := kubeconvtest.APIPod()
	kp.Spec.Volumes = nil
	kp.Spec.Containers[0].VolumeMounts = nil
	return kp
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func pendingStatus(a *Agent, key string) *corev1.PodStatus {
	a.status.mu.Lock()
	defer a.status.mu.Unlock()
	return a.status.pending[key].override
}

// a pod the node cannot run is answered once: Failed with the
// reason and one Warning event; syncing it again, before or after the
// Failed status lands, asks nothing more and is no error (no retry), even
// when the planner refuses its name; a new generation is judged again.
func TestRefusedPodIsAnsweredOnce(t *testing.T) {
	kp := tokenlessAPIPod()
	kp.Generation = 1
	kp.Spec.Volumes = append(kp.Spec.Volumes, corev1.Volume{Name: "share", VolumeSource: corev1.VolumeSource{
		NFS: &corev1.NFSVolumeSource{Server: "nfs.example", Path: "/x"}}})
	p := &admitPlanner{getErr: status.Error(codes.InvalidArgument, "GetPod: pod.name: must be a DNS-1123 subdomain")}
	a, rec, idx := admissionAgent(t, p, kp)
	key := kp.Namespace + "/" + kp.Name
	ctx := t.Context()

	if err := a.syncPod(ctx, key); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	st := pendingStatus(a, key)
	if st == nil || st.Phase != corev1.PodFailed || st.Reason != "UnsupportedPodSpec" || !strings.HasPrefix(st.Message, "Pod was rejected: ") ||
		!strings.Contains(st.Message, ".nfs") {
		t.Fatalf("status = %+v, want Failed/UnsupportedPodSpec naming the field", st)
	}
	if ev := events(rec); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning UnsupportedPodSpec ") {
		t.Fatalf("events = %q, want one Warning UnsupportedPodSpec", ev)
	}
	// Synced again before the status is written: no second answer.
	if err := a.syncPod(ctx, key); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if ev := events(rec); len(ev) != 0 {
		t.Errorf("second sync emitted %q", ev)
	}
	// The Failed status has landed (a fresh agent: nothing remembered);
	// the planner refuses the pod's name in GetPod. That is an answer,
	// not an error to retry for ever.
	failed := kp.DeepCopy()
	failed.Status = *st
	b, rec2, _ := admissionAgent(t, p, failed)
	for i := range 3 {
		if err := b.syncPod(ctx, key); err != nil {
			t.Fatalf("sync %d of the Failed pod: %v (would be retried for ever)", i, err)
		}
	}
	if ev := events(rec2); len(ev) != 0 {
		t.Errorf("the Failed pod got events %q", ev)
	}
	// Deleted: a pod the planner cannot name is not the planner's; its
	// object goes at once (no fake API here: only the planner is asked).
	if rec, err := b.plannerPod(ctx, kp.Namespace, kp.Name); err != nil || rec != nil {
		t.Errorf("plannerPod = %v, %v; want nothing, no error", rec, err)
	}
	// A new generation is judged again.
	kp2 := kp.DeepCopy()
	kp2.Generation = 2
	if err := idx.Update(kp2); err != nil {
		t.Fatal(err)
	}
	if err := a.syncPod(ctx, key); err != nil {
		t.Fatal(err)
	}
	if ev := events(rec); len(ev) != 1 {
		t.Errorf("a changed pod got events %q, want one", ev)
	}
}

// a pod whose spec.os names another OS than the node's, or whose
// kubernetes.io/os label does, is refused at admission with the
// kubelet's reason and message; spec.os.name of the node's OS runs.
func TestPodOSAdmissionAsTheKubelet(t *testing.T) {
	other := "windows"
	if runtime.GOOS == "windows" {
		other = "linux"
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		reason string // "" applied
		msg    string
	}{
		{"spec.os of the node", func(kp *corev1.Pod) { kp.Spec.OS = &corev1.PodOS{Name: corev1.OSName(runtime.GOOS)} }, "", ""},
		{"spec.os of another OS", func(kp *corev1.Pod) { kp.Spec.OS = &corev1.PodOS{Name: corev1.OSName(other)} },
			"PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"},
		{"os label of another OS", func(kp *corev1.Pod) { kp.Labels[corev1.LabelOSStable] = other },
			"PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{"os label of the node", func(kp *corev1.Pod) { kp.Labels[corev1.LabelOSStable] = runtime.GOOS }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp := tokenlessAPIPod()
			tc.change(kp)
			p := &admitPlanner{}
			a, rec, _ := admissionAgent(t, p, kp)
			key := kp.Namespace + "/" + kp.Name
			if err := a.syncPod(t.Context(), key); err != nil {
				t.Fatal(err)
			}
			st, ev := pendingStatus(a, key), events(rec)
			if tc.reason == "" {
				if st != nil || len(ev) != 0 || p.applies != 1 {
					t.Errorf("status %+v, events %q, %d applies; want the pod applied", st, ev, p.applies)
				}
				return
			}
			if st == nil || st.Phase != corev1.PodFailed || st.Reason != tc.reason || st.Message != "Pod was rejected: "+tc.msg {
				t.Errorf("status = %+v, want Failed %s %q", st, tc.reason, tc.msg)
			}
			if len(ev) != 1 || ev[0] != "Warning "+tc.reason+" "+tc.msg {
				t.Errorf("events = %q", ev)
			}
			if p.applies != 0 {
				t.Errorf("the refused pod was applied")
			}
		})
	}
}

// a pod named with 200 characters reaches the planner and is
// applied.
func TestLongNamedPodIsApplied(t *testing.T) {
	kp := tokenlessAPIPod()
	kp.Name = "pod-update-activedeadlineseconds-" + strings.Repeat("x", 167)
	p := &admitPlanner{}
	a, rec, _ := admissionAgent(t, p, kp)
	if err := a.syncPod(t.Context(), kp.Namespace+"/"+kp.Name); err != nil {
		t.Fatal(err)
	}
	if st, ev := pendingStatus(a, kp.Namespace+"/"+kp.Name), events(rec); st != nil || len(ev) != 0 || p.applies != 1 {
		t.Errorf("status %+v, events %q, %d applies; want the pod applied", st, ev, p.applies)
	}
}
