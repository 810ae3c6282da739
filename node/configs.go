package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/planner/manifest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Kinds of configRef.
const (
	kindConfigMap = "configmap"
	kindSecret    = "secret"
)

// configRef names a ConfigMap or Secret a pod references.
type configRef struct {
	Kind, Namespace, Name string
}

func (r configRef) String() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// parseConfigRef reads what configRef.String wrote.
func parseConfigRef(s string) (configRef, bool) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 {
		return configRef{}, false
	}
	return configRef{Kind: parts[0], Namespace: parts[1], Name: parts[2]}, true
}

// podConfigRefs lists the ConfigMaps and Secrets an API pod references
// (volumes, projected sources, kube-root-ca.crt of the service account
// token volume included, env and envFrom of its init, regular and
// ephemeral containers; not image pull secrets), each once, sorted. The
// pod's token Secret is the agent's own (tokens.go), not the API
// server's.
func podConfigRefs(p *corev1.Pod) []configRef {
	set := map[configRef]bool{}
	add := func(kind, name string) {
		if name != "" {
			set[configRef{Kind: kind, Namespace: p.Namespace, Name: name}] = true
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.ConfigMap != nil {
			add(kindConfigMap, v.ConfigMap.Name)
		}
		if v.Secret != nil {
			add(kindSecret, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add(kindConfigMap, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add(kindSecret, s.Secret.Name)
				}
			}
		}
	}
	visit := func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range from {
			if e.ConfigMapRef != nil {
				add(kindConfigMap, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(kindSecret, e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(kindConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(kindSecret, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		visit(c.Env, c.EnvFrom)
	}
	for _, c := range p.Spec.Containers {
		visit(c.Env, c.EnvFrom)
	}
	for _, c := range p.Spec.EphemeralContainers {
		visit(c.Env, c.EnvFrom)
	}
	out := make([]configRef, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ConfigMapFromAPI is the planner's copy of an API ConfigMap, marked with
// the api source annotation.
func ConfigMapFromAPI(cm *corev1.ConfigMap) *syncpodv1.ConfigMap {
	return &syncpodv1.ConfigMap{
		Name: cm.Name, Namespace: cm.Namespace,
		Labels: maps.Clone(cm.Labels), Annotations: sourceAnnotations(cm.Annotations),
		Data: maps.Clone(cm.Data), BinaryData: maps.Clone(cm.BinaryData),
		Immutable: cm.Immutable != nil && *cm.Immutable,
	}
}

// SecretFromAPI is the planner's copy of an API Secret, marked with the
// api source annotation.
func SecretFromAPI(s *corev1.Secret) *syncpodv1.Secret {
	data := maps.Clone(s.Data)
	// stringData is write-only on the API server; a Secret read back has
	// it folded into data, but a hand-made one may not.
	for k, v := range s.StringData {
		if data == nil {
			data = map[string][]byte{}
		}
		data[k] = []byte(v)
	}
	return &syncpodv1.Secret{
		Name: s.Name, Namespace: s.Namespace,
		Labels: maps.Clone(s.Labels), Annotations: sourceAnnotations(s.Annotations),
		Type: string(s.Type), Data: data,
		Immutable: s.Immutable != nil && *s.Immutable,
	}
}

func sourceAnnotations(a map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	// The API server's last-applied copy is large and says nothing the
	// node needs.
	delete(out, corev1.LastAppliedConfigAnnotation)
	out[manifest.SourceAnnotation] = kubeconv.SourceAPI
	return out
}

// configWatch is the single-object informer of one referenced ConfigMap
// or Secret (a field selector on its name: what the Node authorizer lets
// a node read).
type configWatch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// configs mirrors into the planner the ConfigMaps and Secrets the node's
// pods reference, as the kubelet's watch-based manager does: one watch per
// referenced object, started before the pod is applied, each change
// applied to the planner, and the object removed from the planner (and
// its watch stopped) once no pod bound to the node references it.
type configs struct {
	a     *Agent
	queue workqueue.TypedRateLimitingInterface[string]
	// runCtx is the agent's Run context, in which watches run.
	runCtx context.Context

	mu      sync.Mutex
	watches map[configRef]*configWatch
	// reconciled is what the pods referenced at the last reconcile that
	// left the planner clean (nil: none yet, so copies an earlier run
	// left may be there); reconcile owns it.
	reconciled map[configRef]bool
}

func newConfigs(ctx context.Context, a *Agent) *configs {
	return &configs{
		a: a, runCtx: ctx, watches: map[configRef]*configWatch{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "config-objects"}),
	}
}

// listWatch lists and watches the one object ref names.
func (c *configs) listWatch(ref configRef) (*cache.ListWatch, runtime.Object) {
	sel := fields.OneTermEqualSelector("metadata.name", ref.Name).String()
	core := c.a.o.Client.CoreV1()
	if ref.Kind == kindSecret {
		return fieldSelected[*corev1.SecretList](core.Secrets(ref.Namespace), sel), &corev1.Secret{}
	}
	return fieldSelected[*corev1.ConfigMapList](core.ConfigMaps(ref.Namespace), sel), &corev1.ConfigMap{}
}

// ensure starts the watch of ref unless it runs.
func (c *configs) ensure(ref configRef) *configWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.watches[ref]; ok {
		return w
	}
	lw, obj := c.listWatch(ref)
	inf := newInformer(lw, obj, cache.Indexers{})
	enqueue := func(any) { c.queue.Add(ref.String()) }
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	})
	ctx, stop := context.WithCancel(c.runCtx)
	go inf.RunWithContext(ctx)
	w := &configWatch{informer: inf, stop: stop}
	c.watches[ref] = w
	c.a.m.configWatches.Set(float64(len(c.watches)))
	c.a.o.Logger.Debug("watching a referenced object", "object", ref.String())
	return w
}

// prepare makes the planner hold the current ConfigMaps and Secrets pod
// kp references before the pod is applied (so its containers start with
// them). An object the API server does not have is left to the planner,
// which reports the pod's container as the kubelet does.
func (c *configs) prepare(ctx context.Context, kp *corev1.Pod) error {
	for _, ref := range podConfigRefs(kp) {
		w := c.ensure(ref)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		synced := cache.WaitForCacheSync(wctx.Done(), w.informer.HasSynced)
		cancel()
		if !synced {
			return fmt.Errorf("%w: the watch of %s has not synced", errRetry, ref)
		}
		if err := c.push(ctx, ref); err != nil {
			return err
		}
	}
	return nil
}

// sync is the config queue's work: push the object key names.
func (c *configs) sync(ctx context.Context, key string) error {
	ref, ok := parseConfigRef(key)
	if !ok {
		return nil
	}
	return c.push(ctx, ref)
}

// push applies the API server's copy of ref to the planner, or removes
// the planner's copy (if it is the agent's) when the API server has none.
func (c *configs) push(ctx context.Context, ref configRef) error {
	c.mu.Lock()
	w := c.watches[ref]
	c.mu.Unlock()
	if w == nil {
		return nil // no pod references it any more
	}
	obj, exists, err := w.informer.GetStore().GetByKey(ref.Namespace + "/" + ref.Name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	p := c.a.o.Planner
	if !exists {
		return c.removeFromPlanner(ctx, ref)
	}
	var result plannerv1.ApplyResult
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		resp, err := p.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: ConfigMapFromAPI(o)})
		if status.Code(err) == codes.FailedPrecondition {
			// An immutable copy of an object made again: replace it.
			if err := c.removeFromPlanner(ctx, ref); err != nil {
				return err
			}
			resp, err = p.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: ConfigMapFromAPI(o)})
		}
		if err != nil {
			return err
		}
		result = resp.GetResult()
	case *corev1.Secret:
		resp, err := p.ApplySecret(ctx, &plannerv1.ApplySecretRequest{Secret: SecretFromAPI(o)})
		if status.Code(err) == codes.FailedPrecondition {
			if err := c.removeFromPlanner(ctx, ref); err != nil {
				return err
			}
			resp, err = p.ApplySecret(ctx, &plannerv1.ApplySecretRequest{Secret: SecretFromAPI(o)})
		}
		if err != nil {
			return err
		}
		result = resp.GetResult()
	default:
		return fmt.Errorf("unexpected %T in the watch of %s", obj, ref)
	}
	if result != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
		c.a.m.configApplies.WithLabelValues(ref.Kind).Inc()
		c.a.o.Logger.Info("referenced object applied to the planner", "object", ref.String(), "result", result.String())
	}
	return nil
}

// removeFromPlanner deletes the planner's copy of ref when the agent made
// it (source api); one from a file or syncpodctl stays.
func (c *configs) removeFromPlanner(ctx context.Context, ref configRef) error {
	p := c.a.o.Planner
	or := &plannerv1.ConfigObjectRef{Namespace: ref.Namespace, Name: ref.Name}
	var ann map[string]string
	var err error
	if ref.Kind == kindSecret {
		var resp *plannerv1.GetSecretResponse
		resp, err = p.GetSecret(ctx, &plannerv1.GetSecretRequest{Ref: or})
		ann = resp.GetSecret().GetAnnotations()
	} else {
		var resp *plannerv1.GetConfigMapResponse
		resp, err = p.GetConfigMap(ctx, &plannerv1.GetConfigMapRequest{Ref: or})
		ann = resp.GetConfigMap().GetAnnotations()
	}
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if ann[manifest.SourceAnnotation] != kubeconv.SourceAPI {
		return nil
	}
	return c.deleteFromPlanner(ctx, ref)
}

func (c *configs) deleteFromPlanner(ctx context.Context, ref configRef) error {
	p := c.a.o.Planner
	or := &plannerv1.ConfigObjectRef{Namespace: ref.Namespace, Name: ref.Name}
	var err error
	if ref.Kind == kindSecret {
		_, err = p.DeleteSecret(ctx, &plannerv1.DeleteSecretRequest{Ref: or})
	} else {
		_, err = p.DeleteConfigMap(ctx, &plannerv1.DeleteConfigMapRequest{Ref: or})
	}
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err == nil {
		c.a.m.configRemovals.WithLabelValues(ref.Kind).Inc()
		c.a.o.Logger.Info("referenced object removed from the planner", "object", ref.String())
	}
	return err
}

// reconcile stops the watches of objects no pod bound to the node
// references any more and removes from the planner every copy the agent
// made (source api) that no such pod references, including those left by
// an earlier run of the agent.
func (c *configs) reconcile(ctx context.Context, pods []*corev1.Pod) error {
	wanted := map[configRef]bool{}
	for _, p := range pods {
		for _, r := range podConfigRefs(p) {
			wanted[r] = true
		}
		if hasServiceAccountToken(p) {
			wanted[tokenSecretRef(p)] = true // the agent's own
		}
	}
	c.mu.Lock()
	for ref, w := range c.watches {
		if !wanted[ref] {
			w.stop()
			delete(c.watches, ref)
		}
	}
	c.a.m.configWatches.Set(float64(len(c.watches)))
	c.mu.Unlock()

	// The agent copies into the planner only what pods reference: when no
	// reference went since the planner was last found clean, it holds no
	// stale copy, and most pod events (a pod added, its status) need no
	// look at it.
	if c.reconciled != nil && subsetOf(c.reconciled, wanted) {
		c.reconciled = wanted
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	var stale []configRef
	cms, err := c.a.o.Planner.ListConfigMaps(ctx, &plannerv1.ListConfigMapsRequest{})
	if err != nil {
		return err
	}
	for _, cm := range cms.GetConfigMaps() {
		r := configRef{Kind: kindConfigMap, Namespace: cm.GetNamespace(), Name: cm.GetName()}
		if cm.GetAnnotations()[manifest.SourceAnnotation] == kubeconv.SourceAPI && !wanted[r] {
			stale = append(stale, r)
		}
	}
	secrets, err := c.a.o.Planner.ListSecrets(ctx, &plannerv1.ListSecretsRequest{})
	if err != nil {
		return err
	}
	for _, s := range secrets.GetSecrets() {
		r := configRef{Kind: kindSecret, Namespace: s.GetNamespace(), Name: s.GetName()}
		if s.GetAnnotations()[manifest.SourceAnnotation] == kubeconv.SourceAPI && !wanted[r] {
			stale = append(stale, r)
		}
	}
	var errs []error
	for _, r := range stale {
		errs = append(errs, c.deleteFromPlanner(ctx, r))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.reconciled = wanted
	return nil
}

// subsetOf says whether every key of a is in b.
func subsetOf(a, b map[configRef]bool) bool {
	for r := range a {
		if !b[r] {
			return false
		}
	}
	return true
}
