package node

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// apiPod is a pod as the API server sends it: with the managedFields of
// the client that created it and of the node's status writes.
func apiPod(name, rv string) *corev1.Pod {
	fields := func(manager, sub string, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}, Subresource: sub}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv, Generation: 2,
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "kept"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs"}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				fields("kubectl-create", "", `{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{}}}}}`),
				fields("kubelet", "status", `{"f:status":{"f:conditions":{}}}`),
			}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, ContainerID: "containerd://c1"}}},
	}
}

// withoutManagedFields is p with no managedFields and nothing else
// changed.
func withoutManagedFields(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	out.ManagedFields = nil
	return out
}

func TestDropManagedFields(t *testing.T) {
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/gone", Obj: apiPod("gone", "7")}
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"pod", apiPod("web", "5"), withoutManagedFields(apiPod("web", "5"))},
		{"pod without them", withoutManagedFields(apiPod("web", "5")), withoutManagedFields(apiPod("web", "5"))},
		{"service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9"}}},
		// A tombstone is no object: it passes as it is.
		{"tombstone", tombstone, cache.DeletedFinalStateUnknown{Key: "default/gone", Obj: apiPod("gone", "7")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dropManagedFields(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("dropManagedFields:\n got %#v\nwant %#v", got, tc.want)
			}
			// Idempotent, as a transform must be.
			again, err := dropManagedFields(got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, tc.want) {
				t.Errorf("applied twice:\n got %#v\nwant %#v", again, tc.want)
			}
		})
	}
}

// The informers' caches keep the pods without managedFields, listed and
// watched, and everything else the node reads of them as the API server
// sent it.
func TestInformerCacheHoldsPodsWithoutManagedFields(t *testing.T) {
	w := watch.NewFake()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []corev1.Pod{*apiPod("listed", "5")}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
	}
	inf := newInformer(listThenWatch{lw}, &corev1.Pod{}, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	added := make(chan *corev1.Pod, 4)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { added <- obj.(*corev1.Pod) },
		UpdateFunc: func(_, obj any) { added <- obj.(*corev1.Pod) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	w.Add(apiPod("watched", "6"))
	w.Modify(apiPod("listed", "7"))
	for _, want := range []*corev1.Pod{apiPod("listed", "5"), apiPod("watched", "6"), apiPod("listed", "7")} {
		var got *corev1.Pod
		select {
		case got = <-added:
		case <-time.After(30 * time.Second):
			t.Fatalf("no event for %s (resourceVersion %s)", want.Name, want.ResourceVersion)
		}
		if !reflect.DeepEqual(got, withoutManagedFields(want)) {
			t.Errorf("handler got\n %#v\nwant %#v", got, withoutManagedFields(want))
		}
	}
	for _, name := range []string{"listed", "watched"} {
		obj, ok, err := inf.GetIndexer().GetByKey("default/" + name)
		if err != nil || !ok {
			t.Fatalf("cache lacks default/%s: %v", name, err)
		}
		if mf := obj.(*corev1.Pod).ManagedFields; mf != nil {
			t.Errorf("cached default/%s has managedFields %v", name, mf)
		}
	}
}

// listThenWatch has the reflector list and then watch, as it does with a
// client that cannot stream the list over the watch (the fake watch sends
// no initial events).
type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }
