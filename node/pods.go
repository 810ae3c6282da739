package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// plannerCallTimeout bounds one call to the planner.
const plannerCallTimeout = 30 * time.Second

// errRetry asks for the pod to be synced again after a back-off.
var errRetry = errors.New("retry later")

// runQueue processes queue with n workers running sync until ctx ends: a
// failed key is retried with the queue's back-off.
func (a *Agent) runQueue(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], n int, what string,
	fn func(context.Context, string) error) error {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				err := fn(ctx, key)
				switch {
				case err == nil:
					queue.Forget(key)
				case ctx.Err() != nil:
				default:
					a.m.podSyncs.WithLabelValues("error").Inc()
					if !errors.Is(err, errRetry) {
						a.o.Logger.Warn(what+" failed; retrying", "pod", key, "err", err)
					}
					queue.AddRateLimited(key)
				}
				queue.Done(key)
			}
		})
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	return nil
}

// syncPod makes the planner hold what the API server binds to this node
// under key: the pod, its deletion, or nothing.
func (a *Agent) syncPod(ctx context.Context, key string) error {
	ns, name, err := splitKey(key)
	if err != nil {
		return nil
	}
	kp, err := a.lister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		a.conv.Forget(ns, name)
		a.refusals.forget(key)
		a.finalDeletes.forget(key)
		if sk := a.staticKey(ns, name); sk != "" {
			a.mirrorQueue.Add(sk) // a deleted mirror pod is made again
		}
		return a.forget(ctx, ns, name)
	}
	if err != nil {
		return err
	}
	if kp.Spec.NodeName != a.o.NodeName {
		a.conv.Forget(ns, name)
		a.refusals.forget(key)
		return a.forget(ctx, ns, name)
	}
	if _, mirror := kp.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		// A mirror pod stands for a static pod: it is never run, only
		// kept in step with its static pod.
		if sk := a.staticKey(ns, name); sk != "" {
			a.mirrorQueue.Add(sk)
		}
		return nil
	}
	if kp.DeletionTimestamp != nil {
		a.conv.Forget(ns, name) // never converted again
		return a.terminate(ctx, kp)
	}
	if a.refusals.answered(key, kp) {
		// Refused already: the Failed status is on its way and
		// nothing will change the answer for this pod as it is.
		return nil
	}
	if kp.Status.Phase == corev1.PodSucceeded || kp.Status.Phase == corev1.PodFailed {
		// A finished pod is never started again: only one the planner
		// still holds is kept in step.
		if rec, err := a.plannerPod(ctx, ns, name); err != nil || rec == nil || rec.GetPod().GetUid() != string(kp.UID) {
			return err
		}
	}
	if ok, reason, msg := admitOS(kp); !ok {
		// The kubelet's admission judges a pod once, before it runs: a
		// pod the planner runs already is not judged again (its labels
		// may change).
		rec, err := a.plannerPod(ctx, ns, name)
		if err != nil {
			return err
		}
		if rec == nil || rec.GetPod().GetUid() != string(kp.UID) {
			return a.reject(kp, reason, msg)
		}
	}
	sp, warnings, err := a.conv.PodFromAPI(kp)
	if errors.Is(err, kubeconv.ErrUnsupported) {
		return a.refuse(kp, err)
	}
	if err != nil {
		return err
	}
	if sp.ServiceEnvironment, err = serviceEnvironment(a.services, kp); err != nil {
		return err
	}
	if pr := a.pressure.last(); pr.Memory || pr.Disk || pr.PID {
		// Admission under pressure, for pods the planner does not run yet.
		rec, err := a.plannerPod(ctx, ns, name)
		if err != nil {
			return err
		}
		if rec == nil || rec.GetPod().GetUid() != string(kp.UID) {
			if ok, msg := admitUnderPressure(pr, kubeconv.QOSClass(&kp.Spec)); !ok {
				return a.reject(kp, "Evicted", msg)
			}
		}
	}
	if err := a.cfg.prepare(ctx, kp); err != nil {
		return err
	}
	// the tokens go to the planner before the pod; a token the API
	// server refuses is asked again after a back-off, while the pod waits
	// for its volume.
	var tokenErr error
	if kp.Status.Phase != corev1.PodSucceeded && kp.Status.Phase != corev1.PodFailed {
		// A finished pod mounts nothing any more.
		tokenErr = a.prepareTokens(ctx, kp)
	}
	cctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	resp, err := a.o.Planner.ApplyPod(cctx, &plannerv1.ApplyPodRequest{Pod: sp})
	switch status.Code(err) {
	case codes.OK:
	case codes.InvalidArgument:
		return a.refuse(kp, fmt.Errorf("%w: %v", kubeconv.ErrUnsupported, status.Convert(err).Message()))
	case codes.FailedPrecondition:
		if strings.Contains(status.Convert(err).Message(), nodeshutdown.NotAdmittedMessage) {
			// the node is shutting down.
			return a.reject(kp, nodeshutdown.NotAdmittedReason, nodeshutdown.NotAdmittedMessage)
		}
		// An older incarnation under this name: have it stopped first.
		return a.replaceIncarnation(ctx, kp)
	default:
		return err
	}
	if resp.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
		a.m.podSyncs.WithLabelValues("applied").Inc()
		a.o.Logger.Info("pod applied to the planner", "pod", key, "uid", kp.UID, "result", resp.GetResult().String())
		for _, w := range warnings {
			a.o.Logger.Debug("pod field ignored", "pod", key, "warning", w)
		}
	}
	if tokenErr != nil {
		return fmt.Errorf("service account token: %w", tokenErr)
	}
	return nil
}

// plannerPod reads a pod from the planner; nil when it has none.
func (a *Agent) plannerPod(ctx context.Context, ns, name string) (*plannerv1.PodRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	resp, err := a.o.Planner.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Namespace: ns, Name: name}})
	switch status.Code(err) {
	case codes.NotFound:
		return nil, nil
	case codes.InvalidArgument:
		// A name the planner refuses is one it cannot hold a pod
		// under: asking again would get the same answer.
		a.o.Logger.Debug("the planner refuses the pod's name: it holds no such pod", "pod", ns+"/"+name, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return resp.GetRecord(), nil
}

// replaceIncarnation deletes the planner's pod of the same name but
// another uid (when it came from the API server) and retries later.
func (a *Agent) replaceIncarnation(ctx context.Context, kp *corev1.Pod) error {
	rec, err := a.plannerPod(ctx, kp.Namespace, kp.Name)
	if err != nil || rec == nil {
		return errors.Join(err, errRetry)
	}
	old := rec.GetPod()
	if old.GetUid() != string(kp.UID) && old.GetDeletionTime() == nil && old.GetAnnotations()[manifest.SourceAnnotation] == kubeconv.SourceAPI {
		if err := a.plannerDelete(ctx, old, nil); err != nil {
			return err
		}
	}
	return errRetry
}

// plannerDelete marks a planner pod (by uid) as terminating.
func (a *Agent) plannerDelete(ctx context.Context, p *syncpodv1.Pod, grace *int64) error {
	ctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	_, err := a.o.Planner.DeletePod(ctx, &plannerv1.DeletePodRequest{
		Pod:                &plannerv1.PodRef{Namespace: p.GetNamespace(), Name: p.GetName(), Uid: p.GetUid()},
		GracePeriodSeconds: grace,
	})
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err == nil {
		a.m.podSyncs.WithLabelValues("deleted").Inc()
		a.o.Logger.Info("pod deleted in the planner", "pod", p.GetNamespace()+"/"+p.GetName(), "uid", p.GetUid(), "grace_seconds", ptr.Deref(grace, -1))
	}
	return err
}

// forget deletes from the planner the api pod the API server no longer
// binds here (deleted outright, or never ours), with the pod's own grace
// period.
func (a *Agent) forget(ctx context.Context, ns, name string) error {
	rec, err := a.plannerPod(ctx, ns, name)
	if err != nil || rec == nil {
		return err
	}
	p := rec.GetPod()
	if p.GetAnnotations()[manifest.SourceAnnotation] != kubeconv.SourceAPI || p.GetDeletionTime() != nil {
		return nil
	}
	return a.plannerDelete(ctx, p, nil)
}

// terminate carries a deletionTimestamp: the planner stops the pod with
// the grace period the API server chose; once the planner has no such pod
// left, the API object is deleted with grace 0, as the kubelet does.
func (a *Agent) terminate(ctx context.Context, kp *corev1.Pod) error {
	rec, err := a.plannerPod(ctx, kp.Namespace, kp.Name)
	if err != nil {
		return err
	}
	if rec == nil || rec.GetPod().GetUid() != string(kp.UID) {
		return a.deleteAPIPod(ctx, kp)
	}
	if rec.GetPod().GetDeletionTime() == nil {
		if err := a.carryGeneration(ctx, rec.GetPod(), kp.Generation); err != nil {
			return err
		}
		grace := kp.DeletionGracePeriodSeconds
		if grace == nil {
			grace = kp.Spec.TerminationGracePeriodSeconds
		}
		return a.plannerDelete(ctx, rec.GetPod(), grace)
	}
	// Terminating: the planner's DELETED event requeues the pod.
	return nil
}

// carryGeneration gives the planner's pod p the API generation gen when it
// carries another, its spec untouched: a graceful deletion is a generation
// of its own, and the kubelet reports it in the terminating pod's status
//
func (a *Agent) carryGeneration(ctx context.Context, p *syncpodv1.Pod, gen int64) error {
	if p.GetSourceGeneration() == gen {
		return nil
	}
	next := proto.Clone(p).(*syncpodv1.Pod)
	next.SourceGeneration = gen
	ctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	_, err := a.o.Planner.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: next})
	if status.Code(err) == codes.FailedPrecondition {
		return nil // already terminating: it keeps the generation it ran
	}
	return err
}

// deleteAPIPod removes the pod object with grace 0, on the condition that
// it still is this incarnation; once per incarnation, as the kubelet's
// status manager forgets a pod it has deleted: the syncs its object's
// last updates bring before the informer sees it gone ask nothing more of
// the API server.
func (a *Agent) deleteAPIPod(ctx context.Context, kp *corev1.Pod) error {
	key := kp.Namespace + "/" + kp.Name
	if a.finalDeletes.sent(key, kp.UID) {
		return nil
	}
	err := a.o.Client.CoreV1().Pods(kp.Namespace).Delete(ctx, kp.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: ptr.To(kp.UID)},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		err = nil
	} else if err == nil {
		a.o.Logger.Info("pod object deleted: its containers are gone", "pod", key, "uid", kp.UID)
	}
	if err == nil {
		a.finalDeletes.record(key, kp.UID)
	}
	return err
}

// finalDeletes are the incarnations whose object the agent has deleted,
// by pod key, until the informer sees them gone.
type finalDeletes struct {
	mu sync.Mutex
	m  map[string]types.UID
}

func (d *finalDeletes) record(key string, uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]types.UID{}
	}
	d.m[key] = uid
}

func (d *finalDeletes) sent(key string, uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	got, ok := d.m[key]
	return ok && got == uid
}

func (d *finalDeletes) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, key)
}

// refuse reports a pod the node cannot run: phase Failed with the reason,
// and a Warning event, as the kubelet reports a pod its admission refuses.
func (a *Agent) refuse(kp *corev1.Pod, why error) error {
	return a.reject(kp, "UnsupportedPodSpec", why.Error())
}

// reject fails pod kp at admission with reason and msg, as the kubelet's
// admission does (Kubelet.rejectPod): a Warning event with msg, and phase
// Failed with the reason and "Pod was rejected: " + msg. The answer is
// given once for the pod as it is: later syncs of the same
// incarnation and generation return at once.
func (a *Agent) reject(kp *corev1.Pod, reason, msg string) error {
	key := kp.Namespace + "/" + kp.Name
	a.refusals.record(key, kp)
	a.m.podSyncs.WithLabelValues("refused").Inc()
	a.o.Logger.Warn("pod refused", "pod", key, "reason", reason, "message", msg)
	a.recorder.Event(kp, corev1.EventTypeWarning, reason, msg)
	st := corev1.PodStatus{
		Phase: corev1.PodFailed, Reason: reason, Message: "Pod was rejected: " + msg, QOSClass: kubeconv.QOSClass(&kp.Spec),
	}
	if ip := a.o.Host.InternalIP; ip != "" {
		st.HostIP, st.HostIPs = ip, []corev1.HostIP{{IP: ip}}
	}
	if kp.Status.StartTime != nil {
		st.StartTime = kp.Status.StartTime
	} else {
		now := metav1.NewTime(a.o.Now().Truncate(time.Second))
		st.StartTime = &now
	}
	st.Conditions = kubeconv.ForeignConditions(kp)
	a.status.Set(key, statusSource{uid: kp.UID, override: &st, generation: kp.Generation})
	return nil
}

// The kubelet's reasons and messages of its OS admission
// (pkg/kubelet/lifecycle/predicate.go).
const (
	reasonOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	reasonOSNotSupported     = "PodOSNotSupported"
	msgOSSelectorMismatch    = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	msgOSNotSupported        = "Failed to admit pod as the OS field doesn't match node OS"
)

// admitOS is the kubelet's OS admission: a pod labelled
// kubernetes.io/os with another OS than the node's, or whose spec.os names
// another OS, is refused with the kubelet's reason and message.
func admitOS(kp *corev1.Pod) (ok bool, reason, msg string) {
	if v, set := kp.Labels[corev1.LabelOSStable]; set && v != runtime.GOOS {
		return false, reasonOSSelectorMismatch, msgOSSelectorMismatch
	}
	if kp.Spec.OS != nil && string(kp.Spec.OS.Name) != runtime.GOOS {
		return false, reasonOSNotSupported, msgOSNotSupported
	}
	return true, "", ""
}

// refusals remembers the pods refused at admission, by key, with the
// incarnation and generation refused, so that a pod is answered once and
// a new incarnation or a changed spec is judged again.
type refusals struct {
	mu sync.Mutex
	m  map[string]refusal
}

type refusal struct {
	uid        types.UID
	generation int64
}

func (r *refusals) record(key string, kp *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]refusal{}
	}
	r.m[key] = refusal{uid: kp.UID, generation: kp.Generation}
}

// answered says whether kp, as it is, was refused already; a refusal of
// another incarnation or generation is dropped.
func (r *refusals) answered(key string, kp *corev1.Pod) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	got, ok := r.m[key]
	if !ok {
		return false
	}
	if got.uid == kp.UID && got.generation == kp.Generation {
		return true
	}
	delete(r.m, key)
	return false
}

// forget drops what is remembered of key: the pod went.
func (r *refusals) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}

// runPlannerWatch follows the planner's WatchPods stream (reconnecting
// when it breaks): status and events of api pods go to the API server, and
// a pod the planner removed is requeued so its API object goes too.
func (a *Agent) runPlannerWatch(ctx context.Context) error {
	delay := 200 * time.Millisecond
	for ctx.Err() == nil {
		err := a.watchOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		a.o.Logger.Warn("planner watch ended; reconnecting", "err", err, "in", delay)
		if !sleep(ctx, delay) {
			return nil
		}
		delay = min(2*delay, 5*time.Second)
	}
	return nil
}

func (a *Agent) watchOnce(ctx context.Context) error {
	stream, err := a.o.Planner.WatchPods(ctx, &plannerv1.WatchPodsRequest{})
	if err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return errors.New("stream closed")
		}
		if err != nil {
			return err
		}
		if resp.GetType() == plannerv1.WatchEventType_WATCH_EVENT_TYPE_RESYNC {
			if err := a.relistPlanner(ctx); err != nil {
				return err
			}
			continue
		}
		a.onPlannerRecord(resp.GetType(), resp.GetRecord())
	}
}

// relistPlanner catches up after the watch fell behind.
func (a *Agent) relistPlanner(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	resp, err := a.o.Planner.ListPods(ctx, &plannerv1.ListPodsRequest{})
	if err != nil {
		return err
	}
	for _, r := range resp.GetRecords() {
		a.onPlannerRecord(plannerv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, r)
	}
	return nil
}

func (a *Agent) onPlannerRecord(typ plannerv1.WatchEventType, rec *plannerv1.PodRecord) {
	p := rec.GetPod()
	ns := p.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	key := ns + "/" + p.GetName()
	switch p.GetAnnotations()[manifest.SourceAnnotation] {
	case kubeconv.SourceAPI:
	case manifest.SourceFile:
		a.observeStatic(key, rec, typ == plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED)
		return
	default:
		return
	}
	uid := types.UID(p.GetUid())
	if typ == plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED {
		a.status.Forget(key, uid)
		a.relay.Forget(uid)
		a.podQueue.Add(key)
		return
	}
	kp, err := a.lister.Pods(ns).Get(p.GetName())
	if err != nil || kp.UID != uid {
		return
	}
	if rec.GetStatus() != nil {
		a.status.Set(key, statusSource{uid: uid, planner: rec.GetStatus(), generation: observedSourceGeneration(rec)})
	}
	if len(rec.GetEvents()) > 0 {
		a.relay.Observe(kp, rec.GetEvents())
	}
}

// observedSourceGeneration is the API generation the record's status is
// of: the source generation of the pod the planner holds when its
// status was computed for the spec it holds, and 0 (not known) while the
// status is of an older spec.
func observedSourceGeneration(rec *plannerv1.PodRecord) int64 {
	if rec.GetStatus().GetObservedGeneration() != rec.GetPod().GetGeneration() {
		return 0
	}
	return rec.GetPod().GetSourceGeneration()
}

// runOrphanSweep deletes, now and every minute, the planner's api pods
// that the API server does not bind to this node (removed while the agent
// was down).
func (a *Agent) runOrphanSweep(ctx context.Context) error {
	for {
		if err := a.sweepOrphans(ctx); err != nil && ctx.Err() == nil {
			a.o.Logger.Warn("cannot reconcile the planner's api pods", "err", err)
		}
		if !sleep(ctx, time.Minute) {
			return nil
		}
	}
}

func (a *Agent) sweepOrphans(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	resp, err := a.o.Planner.ListPods(cctx, &plannerv1.ListPodsRequest{})
	if err != nil {
		return err
	}
	static := map[string]bool{}
	for _, r := range resp.GetRecords() {
		p := r.GetPod()
		if p.GetAnnotations()[manifest.SourceAnnotation] == manifest.SourceFile {
			static[p.GetNamespace()+"/"+p.GetName()] = true
		}
		if p.GetAnnotations()[manifest.SourceAnnotation] != kubeconv.SourceAPI {
			continue
		}
		ns := p.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		kp, err := a.lister.Pods(ns).Get(p.GetName())
		if err == nil && kp.UID == types.UID(p.GetUid()) {
			continue
		}
		if p.GetDeletionTime() == nil {
			if err := a.plannerDelete(ctx, p, nil); err != nil {
				return err
			}
		}
	}
	// Mirror pods of static pods that are gone (removed while the agent
	// was down) go too.
	all, err := a.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, kp := range all {
		if _, mirror := kp.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
			continue
		}
		if sk := a.staticKey(kp.Namespace, kp.Name); sk != "" && !static[sk] {
			a.mirrorQueue.Add(sk)
		}
	}
	return nil
}
