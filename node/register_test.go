package node

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// TestNodeStatusWriteRereadsANodeOthersTainted: the controller-manager
// tainted the Node after the agent last read it; NodeRestriction refuses
// a status write that carries the old taints (Forbidden). The agent reads
// the Node again and writes its status with the taints as they are, so
// the node does not stay NotReady for ever.
func TestNodeStatusWriteRereadsANodeOthersTainted(t *testing.T) {
	sch := runtime.NewScheme()
	if err := corev1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(sch)
	taint := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	current := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}}}
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		enc := codecs.LegacyCodec(corev1.SchemeGroupVersion)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes/n1":
			_ = enc.Encode(current, w)
		case r.Method == http.MethodPut && r.URL.Path == "/api/v1/nodes/n1/status":
			body, _ := io.ReadAll(r.Body)
			obj, _, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
			n, ok := obj.(*corev1.Node)
			if err != nil || !ok {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			if len(n.Spec.Taints) != len(current.Spec.Taints) {
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,` +
					`"message":"node \"n1\" is not allowed to modify taints"}`))
				return
			}
			current.Status = n.Status
			_ = enc.Encode(current, w)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Client: c, Planner: &admitPlanner{}, NodeName: "n1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	stale := current.DeepCopy()
	stale.Spec.Taints = nil
	got, err := a.postNodeStatus(t.Context(), stale, true, "", Pressure{})
	if err != nil {
		t.Fatalf("postNodeStatus: %v (calls %q)", err, calls)
	}
	if len(got.Spec.Taints) != 1 || !nodeReady(got) {
		t.Errorf("written node: taints %v, ready %v; want the controller's taint kept and Ready", got.Spec.Taints, nodeReady(got))
	}
	want := []string{"PUT /api/v1/nodes/n1/status", "GET /api/v1/nodes/n1", "PUT /api/v1/nodes/n1/status"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}

// nodeReady says whether n's Ready condition is true.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
