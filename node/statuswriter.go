package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"golang.org/x/time/rate"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/util/workqueue"

	"github.com/syncpod/syncpod/node/kubeconv"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// statusSource is one pod's newest status as the node sees it: the
// planner's status, or a status the agent decided itself (a refused pod).
type statusSource struct {
	uid      types.UID
	planner  *syncpodv1.PodStatus
	override *corev1.PodStatus
	// generation is the API object's metadata.generation this status is
	// of; 0 when not known (a status of an older spec than the planner
	// holds): the generation last written stays.
	generation int64
}

// statusWriter keeps the newest status of each pod and writes it through
// the status subresource. Set replaces whatever was pending for the pod, so
// a burst of changes is one write of the newest; a write that fails is
// retried with back-off; the queue's rate limiter bounds the writes per
// second. Only the fields that differ from the API server's copy are sent
// (a strategic-merge patch with the pod's uid as precondition).
type statusWriter struct {
	// get reads the API server's copy (the informer's cache).
	get func(namespace, name string) (*corev1.Pod, error)
	// patch sends a status patch and returns the pod as stored.
	patch  func(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	hostIP string
	queue  workqueue.TypedRateLimitingInterface[string]
	// limiter bounds the patches per second (nil: unbounded). A worker
	// that has a patch to send and no token waits on it, then reads the
	// pod's newest status, so whatever arrives meanwhile is part of the
	// same write.
	limiter *rate.Limiter
	logger  *slog.Logger
	m       *metrics

	mu      sync.Mutex
	pending map[string]statusSource
	// written is the pod the last successful patch returned, used instead
	// of the cache while the cache has not caught up with it.
	written map[string]*corev1.Pod
}

func newStatusWriter(queue workqueue.TypedRateLimitingInterface[string], limiter *rate.Limiter, hostIP string, logger *slog.Logger, m *metrics,
	get func(string, string) (*corev1.Pod, error),
	patch func(context.Context, string, string, []byte) (*corev1.Pod, error)) *statusWriter {
	return &statusWriter{
		get: get, patch: patch, hostIP: hostIP, queue: queue, limiter: limiter, logger: logger, m: m,
		pending: map[string]statusSource{}, written: map[string]*corev1.Pod{},
	}
}

// Set records the newest status of pod key (namespace/name, incarnation
// uid) and schedules its write.
func (w *statusWriter) Set(key string, src statusSource) {
	w.mu.Lock()
	w.pending[key] = src
	w.mu.Unlock()
	w.queue.Add(key)
}

// Forget drops what is known of pod key's incarnation uid (it is gone).
func (w *statusWriter) Forget(key string, uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.pending[key]; ok && s.uid == uid {
		delete(w.pending, key)
	}
	if p, ok := w.written[key]; ok && p.UID == uid {
		delete(w.written, key)
	}
}

// cached is told of each pod the informer's cache now holds: once it holds
// the last patch's result or newer, the copy of that result is dropped
// (the cache serves from then on), so no pod keeps a second API object.
func (w *statusWriter) cached(p *corev1.Pod) {
	key := p.Namespace + "/" + p.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	if base, ok := w.written[key]; ok && (base.UID != p.UID || !newerThan(base.ResourceVersion, p.ResourceVersion)) {
		delete(w.written, key)
	}
}

// Run processes the queue with n workers until ctx ends.
func (w *statusWriter) Run(ctx context.Context, n int) error {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for w.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
}

func (w *statusWriter) processNext(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.sync(ctx, key); err != nil {
		w.m.statusWrites.WithLabelValues("error").Inc()
		w.logger.Warn("pod status write failed; retrying", "pod", key, "err", err)
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

// desired renders src for the API server's copy cur. Its
// observedGeneration is src's generation, never less than the one already
// written, as the kubelet's status manager keeps it.
func (w *statusWriter) desired(src statusSource, cur *corev1.Pod) corev1.PodStatus {
	gen := max(src.generation, cur.Status.ObservedGeneration)
	var st corev1.PodStatus
	if src.override != nil {
		st = *src.override.DeepCopy()
		st.ObservedGeneration = gen
	} else {
		st = kubeconv.StatusToAPI(src.planner, cur, w.hostIP, gen)
	}
	// Fields the node does not own stay as they are.
	st.NominatedNodeName = cur.Status.NominatedNodeName
	st.ResourceClaimStatuses = cur.Status.ResourceClaimStatuses
	return st
}

func (w *statusWriter) sync(ctx context.Context, key string) error {
	ns, name, err := splitKey(key)
	if err != nil {
		return nil
	}
	// Only a patch takes a token of the bucket: a status already written,
	// or of a pod gone, costs none. After a wait for a token the newest
	// status is read again, so whatever arrived meanwhile is part of the
	// same write; with a token at hand the status just read is written.
	src, cur, want, ok, err := w.prepare(key, ns, name)
	if err != nil || !ok {
		return err
	}
	if w.limiter != nil && !w.limiter.Allow() {
		if err := w.limiter.Wait(ctx); err != nil {
			return err
		}
		if src, cur, want, ok, err = w.prepare(key, ns, name); err != nil || !ok {
			return err
		}
	}
	patch, err := statusPatch(cur.UID, cur.Status, want)
	if err != nil {
		return err
	}
	got, err := w.patch(ctx, ns, name, patch)
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or replaced by a pod of another uid (the precondition).
		w.Forget(key, src.uid)
		return nil
	case err != nil:
		return err
	}
	w.m.statusWrites.WithLabelValues("patched").Inc()
	w.mu.Lock()
	// Kept only while the cache is behind it (cached drops it once the
	// cache holds it; under w.mu, so an update the cache takes in after
	// this look is seen by cached).
	if c, err := w.get(ns, name); err != nil || c.UID != got.UID || newerThan(got.ResourceVersion, c.ResourceVersion) {
		w.written[key] = got
	} else {
		delete(w.written, key)
	}
	w.dropPending(key, src)
	w.mu.Unlock()
	return nil
}

// dropPending forgets pod key's pending status src once the API server
// holds it (patched, or found there already), unless a newer one replaced
// it meanwhile: only a Set queues the pod again, with a status of its own,
// so a status kept for each pod would serve nothing for the pod's life.
// w.mu is held.
func (w *statusWriter) dropPending(key string, src statusSource) {
	if cur, ok := w.pending[key]; ok && cur.uid == src.uid && cur.planner == src.planner &&
		cur.override == src.override && cur.generation == src.generation {
		delete(w.pending, key)
	}
}

// prepare is what a write of pod key's newest status starts from: that
// status, the API server's copy and the status wanted; ok false when
// there is nothing to write: no status pending, the pod gone or another
// incarnation (its status forgotten), or the copy already as wanted
// (counted unchanged).
func (w *statusWriter) prepare(key, ns, name string) (src statusSource, cur *corev1.Pod, want corev1.PodStatus, ok bool, err error) {
	w.mu.Lock()
	src, ok = w.pending[key]
	base := w.written[key]
	w.mu.Unlock()
	if !ok {
		return src, nil, want, false, nil
	}
	cur, err = w.get(ns, name)
	if apierrors.IsNotFound(err) {
		w.Forget(key, src.uid)
		return src, nil, want, false, nil
	}
	if err != nil {
		return src, nil, want, false, err
	}
	if cur.UID != src.uid {
		// Another incarnation: this status is of a pod that is gone.
		w.Forget(key, src.uid)
		return src, nil, want, false, nil
	}
	if base != nil && base.UID == cur.UID && newerThan(base.ResourceVersion, cur.ResourceVersion) {
		cur = base
	}
	want = w.desired(src, cur)
	if apiequality.Semantic.DeepEqual(cur.Status, want) {
		w.m.statusWrites.WithLabelValues("unchanged").Inc()
		w.mu.Lock()
		w.dropPending(key, src)
		w.mu.Unlock()
		return src, cur, want, false, nil
	}
	return src, cur, want, true, nil
}

// newerThan compares resource versions as numbers (etcd revisions); an
// unparsable one is never newer.
func newerThan(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x > y
}

// statusPatch is the strategic-merge patch from old to new status, with
// metadata.uid as a precondition: a pod recreated under the same name is
// never written with its predecessor's status.
func statusPatch(uid types.UID, old, new corev1.PodStatus) ([]byte, error) {
	oldJS, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, err
	}
	newJS, err := json.Marshal(corev1.Pod{Status: new})
	if err != nil {
		return nil, err
	}
	p, err := strategicpatch.CreateTwoWayMergePatch(oldJS, newJS, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		return nil, err
	}
	m["metadata"] = map[string]any{"uid": string(uid)}
	return json.Marshal(m)
}

// splitKey splits namespace/name.
func splitKey(key string) (string, string, error) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("bad key %q", key)
}
