package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/syncpod/syncpod/node/kubeconv"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// Options configure an Agent. Client, Planner, NodeName and Logger are
// required.
type Options struct {
	// Client talks to the API server.
	Client *Client
	// Planner is the node's planner.
	Planner plannerv1.PlannerServiceClient
	// PlannerHealth, when set, decides the node's Ready condition: Ready
	// while the planner's health check answers SERVING.
	PlannerHealth healthpb.HealthClient
	// NodeName is the Node object's name.
	NodeName string
	// Host is what the Node says about the machine.
	Host Host
	// Labels are added to the well-known node labels.
	Labels map[string]string
	// LeaseDuration is the Lease's leaseDurationSeconds (default 40 s).
	LeaseDuration time.Duration
	// LeaseRenewInterval is how often the Lease is renewed (default 10 s).
	LeaseRenewInterval time.Duration
	// StatusUpdateFrequency is how often the Node status is posted when
	// nothing changes (default 5 min, the kubelet's
	// nodeStatusReportFrequency: the Lease is the heartbeat); a readiness
	// or pressure change is posted at once.
	StatusUpdateFrequency time.Duration
	// StatusQPS and StatusBurst bound the pod status patches (default
	// DefaultStatusQPS and DefaultStatusBurst).
	StatusQPS   float64
	StatusBurst int
	// Workers is the number of pod sync and status workers each (default 4).
	Workers int
	// Logger receives the agent's logs.
	Logger *slog.Logger
	// Registry gets the agent's metrics; nil means none.
	Registry prometheus.Registerer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultStatusQPS and DefaultStatusBurst bound the pod status patches by
// default: the kubelet's own API client's defaults (its kubeAPIQPS and
// kubeAPIBurst), which are all that bound its status manager's writes. A
// tighter bucket held a burst of 250 pods' statuses back: two writes a
// pod (created, running) at 10 a second are 50 s of writes.
const (
	DefaultStatusQPS   = 50
	DefaultStatusBurst = 100
)

// Agent is the node agent. Build it with New; Run does the work.
type Agent struct {
	o        Options
	m        *metrics
	podQueue workqueue.TypedRateLimitingInterface[string]
	// mirrorQueue holds static pods (planner keys) whose mirror pod needs
	// a look.
	mirrorQueue workqueue.TypedRateLimitingInterface[string]
	mirror      *mirrors
	status      *statusWriter
	relay       *eventRelay
	lister      corelisters.PodLister
	// services lists the cluster's Services with a cluster IP, for the
	// pods' Service environment.
	services corelisters.ServiceLister
	// synced is the lister once its cache has synced (read by the read
	// API's goroutines).
	synced   atomic.Pointer[corelisters.PodLister]
	recorder record.EventRecorder
	// pressure is what the planner last reported of the node's
	// pressure conditions.
	pressure *pressureState
	// cfg mirrors the ConfigMaps and Secrets the pods reference.
	cfg *configs
	// cfgReconcile holds one key when the referenced set may have
	// shrunk (a pod changed or went).
	cfgReconcile workqueue.TypedRateLimitingInterface[string]
	// refusals are the pods refused at admission, answered once.
	refusals refusals
	// finalDeletes are the pod objects deleted once their containers were
	// gone, deleted once.
	finalDeletes finalDeletes
	// tokens are the pods' service account tokens.
	tokens *tokenManager
	// conv converts the pods for the planner, each again only when what
	// the conversion reads of it changed.
	conv *kubeconv.Converter
}

// New checks o and builds an Agent.
func New(o Options) (*Agent, error) {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("node: Client is required"))
	}
	if o.Planner == nil {
		errs = append(errs, errors.New("node: Planner is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("node: NodeName is required"))
	}
	if o.Logger == nil {
		errs = append(errs, errors.New("node: Logger is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 40 * time.Second
	}
	if o.LeaseRenewInterval <= 0 {
		o.LeaseRenewInterval = 10 * time.Second
	}
	if o.StatusUpdateFrequency <= 0 {
		o.StatusUpdateFrequency = 5 * time.Minute
	}
	if o.StatusQPS <= 0 {
		o.StatusQPS = DefaultStatusQPS
	}
	if o.StatusBurst <= 0 {
		o.StatusBurst = DefaultStatusBurst
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Host.MaxPods <= 0 {
		o.Host.MaxPods = 110
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m, err := newMetrics(o.Registry)
	if err != nil {
		return nil, fmt.Errorf("node agent: metrics: %w", err)
	}
	return &Agent{o: o, m: m, conv: kubeconv.NewConverter(), mirror: &mirrors{static: map[string]*plannerv1.PodRecord{}},
		pressure: &pressureState{},
		tokens:   newTokenManager(o.Client.CoreV1().CreateToken, o.Now)}, nil
}

// Run registers the node and keeps it, its lease, its pods, their status
// and events in step with the API server until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	log := a.o.Logger
	started := a.o.Now()
	node, err := a.register(ctx)
	if err != nil {
		return err
	}
	log.Info("node registered", "node", a.o.NodeName, "uid", node.UID)

	// Only the pod informer, on the pods bound to this node, and the
	// Service informer are built (not client-go's informer factory, which
	// compiles an informer for every API group).
	bound := fields.OneTermEqualSelector("spec.nodeName", a.o.NodeName).String()
	pods := a.o.Client.CoreV1().Pods(metav1.NamespaceAll)
	podInformer := newInformer(fieldSelected[*corev1.PodList](pods, bound), &corev1.Pod{}, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	a.lister = corelisters.NewPodLister(podInformer.GetIndexer())
	a.podQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"})
	a.mirrorQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "mirror-pods"})
	// The queue's limiter spaces out retries of a failed write; the
	// bucket bounds all writes.
	statusQueue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pod-status"})
	a.status = newStatusWriter(statusQueue, rate.NewLimiter(rate.Limit(a.o.StatusQPS), a.o.StatusBurst), a.o.Host.InternalIP, log, a.m,
		func(ns, name string) (*corev1.Pod, error) { return a.lister.Pods(ns).Get(name) },
		func(ctx context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
			return a.o.Client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		})

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(eventSink{a.o.Client.CoreV1()})
	defer broadcaster.Shutdown()
	a.recorder = broadcaster.NewRecorder(a.o.Client.schemeOrNew().types, corev1.EventSource{Component: "kubelet", Host: a.o.NodeName})
	a.relay = newEventRelay(started, func(ref *corev1.ObjectReference, typ, reason, msg string) {
		a.m.events.Inc()
		a.recorder.Event(ref, typ, reason, msg)
	})

	a.cfg = newConfigs(ctx, a)
	a.cfgReconcile = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "config-reconcile"})
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			a.podQueue.Add(key)
			a.cfgReconcile.Add(cfgReconcileKey)
		}
	}
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			if n, ok := obj.(*corev1.Pod); ok {
				a.status.cached(n)
			}
			// Our own status writes come back as updates: only a change
			// of what the planner holds needs a sync.
			if o, ok := old.(*corev1.Pod); ok {
				if n, ok := obj.(*corev1.Pod); ok && !podChanged(o, n) {
					return
				}
			}
			enqueue(obj)
		},
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	serviceInformer := a.newServiceInformer()
	a.services = corelisters.NewServiceLister(serviceInformer.GetIndexer())
	if _, err := serviceInformer.AddEventHandler(a.serviceHandler()); err != nil {
		return err
	}
	informerCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	go podInformer.RunWithContext(informerCtx)
	go serviceInformer.RunWithContext(informerCtx)
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		return fmt.Errorf("pod informer cache did not sync: %w", ctx.Err())
	}
	a.synced.Store(&a.lister)
	log.Info("pod informer synced", "pods", len(podInformer.GetStore().ListKeys()))
	// No pod is handed to the planner before the Services have been
	// listed once, so none starts without its Service variables.
	if !cache.WaitForCacheSync(ctx.Done(), serviceInformer.HasSynced) {
		return fmt.Errorf("service informer cache did not sync: %w", ctx.Err())
	}
	log.Info("service informer synced", "services", len(serviceInformer.GetStore().ListKeys()))

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.runLease(ctx, node) })
	g.Go(func() error { return a.runNodeStatus(ctx, node) })
	g.Go(func() error { return a.status.Run(ctx, a.o.Workers) })
	g.Go(func() error { return a.runQueue(ctx, a.podQueue, a.o.Workers, "pod sync", a.syncPod) })
	g.Go(func() error { return a.runQueue(ctx, a.mirrorQueue, 1, "mirror pod sync", a.syncMirror) })
	g.Go(func() error { return a.runPlannerWatch(ctx) })
	g.Go(func() error { return a.runOrphanSweep(ctx) })
	g.Go(func() error { return a.runTokenRefresh(ctx) })
	g.Go(func() error { return a.runQueue(ctx, a.cfg.queue, 2, "referenced object sync", a.cfg.sync) })
	a.cfgReconcile.Add(cfgReconcileKey) // copies left by an earlier run
	g.Go(func() error {
		return a.runQueue(ctx, a.cfgReconcile, 1, "referenced objects reconcile", func(ctx context.Context, _ string) error {
			pods, err := a.lister.List(labels.Everything())
			if err != nil {
				return err
			}
			return a.cfg.reconcile(ctx, pods)
		})
	})
	return g.Wait()
}

// cfgReconcileKey is the one key of the config reconcile queue.
const cfgReconcileKey = "all"

// BoundPods lists the pods the API server binds to this node, as the
// agent's informer sees them; an error until it has synced.
func (a *Agent) BoundPods() ([]*corev1.Pod, error) {
	l := a.synced.Load()
	if l == nil {
		return nil, errors.New("the pod informer has not synced yet")
	}
	return (*l).List(labels.Everything())
}

// StaticName is the planner name of the static pod whose mirror pod is
// name (false when name cannot be a mirror pod of this node's).
func (a *Agent) StaticName(ns, name string) (string, bool) {
	key := a.staticKey(ns, name)
	if key == "" {
		return "", false
	}
	_, n, err := splitKey(key)
	return n, err == nil
}

// MirrorName is the API name of the mirror pod of the planner's static
// pod ns/name (false when the planner holds no such static pod).
func (a *Agent) MirrorName(ns, name string) (string, bool) {
	a.mirror.mu.Lock()
	defer a.mirror.mu.Unlock()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	if a.mirror.static[ns+"/"+name] == nil {
		return "", false
	}
	return a.mirrorName(name), true
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// podChanged says whether a pod update touches what the node carries into
// the planner: spec, labels, annotations, deletion, generation, or a phase
// that ended.
func podChanged(old, cur *corev1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
		!apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!apiequality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		!apiequality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp) ||
		old.UID != cur.UID || old.Status.Phase != cur.Status.Phase ||
		old.Generation != cur.Generation // each generation is reported
}
