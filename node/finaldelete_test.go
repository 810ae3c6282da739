package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// emptyPlanner holds no pod.
type emptyPlanner struct{ plannerv1.PlannerServiceClient }

func (emptyPlanner) GetPod(context.Context, *plannerv1.GetPodRequest, ...grpc.CallOption) (*plannerv1.GetPodResponse, error) {
	return nil, status.Error(codes.NotFound, "no such pod")
}

// TestAPIPodIsDeletedOncePerIncarnation: once its containers are gone, a
// terminating pod's object is deleted with grace 0, once: the syncs that
// the object's last updates bring before the informer sees it gone send
// nothing more, and a new incarnation under the name is deleted again.
func TestAPIPodIsDeletedOncePerIncarnation(t *testing.T) {
	kp := tokenlessAPIPod()
	now := metav1.NewTime(time.Now())
	kp.DeletionTimestamp, kp.DeletionGracePeriodSeconds = &now, new(int64(30))
	// The API server: every delete of the pod answered as done.
	var deleted atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete || r.URL.Path != "/api/v1/namespaces/"+kp.Namespace+"/pods/"+kp.Name {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		deleted.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	}))
	defer api.Close()
	client, err := NewClient(&rest.Config{Host: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(kp); err != nil {
		t.Fatal(err)
	}
	a := &Agent{
		o:      Options{Planner: emptyPlanner{}, Client: client, NodeName: kp.Spec.NodeName, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		lister: corelisters.NewPodLister(indexer),
	}
	key := kp.Namespace + "/" + kp.Name
	deletes := func() int { return int(deleted.Load()) }
	for range 3 {
		if err := a.syncPod(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if n := deletes(); n != 1 {
		t.Fatalf("%d deletes of one incarnation's object, want 1", n)
	}

	// The informer sees it gone; a new incarnation comes and is deleted.
	if err := indexer.Delete(kp); err != nil {
		t.Fatal(err)
	}
	if err := a.syncPod(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	next := kp.DeepCopy()
	next.UID = types.UID("0d6f9c1e-0000-4000-8000-0000000000ff")
	if err := indexer.Add(next); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.syncPod(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if n := deletes(); n != 2 {
		t.Fatalf("%d deletes after a second incarnation, want 2", n)
	}
}
