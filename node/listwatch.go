package node

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// lister is what client-go's typed client of one kind in one namespace
// (or all) offers an informer: its list, of type L, and its watch.
type lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// fieldSelected lists and watches only the objects of c that match the
// field selector sel, so the API server sends no others: the pods bound
// to this node, the Services with a cluster IP, one ConfigMap or Secret.
func fieldSelected[L runtime.Object](c lister[L], sel string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return c.Watch(ctx, o)
		},
	}
}

// newInformer is client-go's shared informer of the objects lw lists (of
// obj's type), with no resync, its cache keeping them without their
// managedFields (dropManagedFields).
func newInformer(lw cache.ListerWatcher, obj runtime.Object, indexers cache.Indexers) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(lw, obj, 0, indexers)
	// SetTransform fails only on an informer already started.
	_ = inf.SetTransform(dropManagedFields)
	return inf
}

// dropManagedFields is the informers' transform: it clears an object's
// managedFields (server-side apply's record of which manager set which
// field) as the object arrives, before the cache keeps it. Nothing the
// node does reads them (it writes pod status with strategic merge patches,
// and the kubelet's read API's /pods is the one place they would show),
// and they are often the largest part of an object's metadata: a pod's
// status manager alone lists every condition and container status field.
// The scheduler's pod informer drops them the same way. It changes the
// object in place, which is the informer's fresh decode and nobody else's
// yet, and is idempotent, as a transform must be; anything that is not an
// object (a deleted object's tombstone) passes as it is.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
