package node

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"testing"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/internal/grpctest"
	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/plannertest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func TestPodConfigRefs(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "both", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}},
			}}}},
			// The API server's token volume: its kube-root-ca.crt is
			// mounted as the cluster's CA.
			{Name: "kube-api-access-x1y2z", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}},
		}}},
		Containers: []corev1.Container{{Name: "app",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
			Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
				{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "modes"}, Key: "mode"}}},
				{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			}}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
			Env: []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-token"}, Key: "t"}}}}}}},
	}}
	var got []string
	for _, r := range podConfigRefs(p) {
		got = append(got, r.String())
	}
	want := []string{
		"configmap/team/app-config", "configmap/team/extra", "configmap/team/kube-root-ca.crt", "configmap/team/modes",
		"secret/team/db", "secret/team/debug-token", "secret/team/init-env", "secret/team/tls",
	}
	if !slices.Equal(got, want) {
		t.Errorf("podConfigRefs:\n got %v\nwant %v", got, want)
	}
	if refs := podConfigRefs(&corev1.Pod{}); len(refs) != 0 {
		t.Errorf("a pod with no references: %v", refs)
	}
	for _, s := range want {
		r, ok := parseConfigRef(s)
		if !ok || r.String() != s {
			t.Errorf("parseConfigRef(%q) = %v %v", s, r, ok)
		}
	}
}

func TestConfigObjectsFromAPI(t *testing.T) {
	cm := ConfigMapFromAPI(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{...}", "note": "x"}},
		Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {1, 2}}, Immutable: ptr.To(true),
	})
	if cm.GetName() != "app" || cm.GetNamespace() != "team" || cm.GetData()["k"] != "v" || len(cm.GetBinaryData()["b"]) != 2 ||
		!cm.GetImmutable() || cm.GetLabels()["a"] != "b" || cm.GetAnnotations()["note"] != "x" ||
		cm.GetAnnotations()[manifest.SourceAnnotation] != kubeconv.SourceAPI || cm.GetAnnotations()[corev1.LastAppliedConfigAnnotation] != "" {
		t.Errorf("ConfigMapFromAPI = %v", cm)
	}
	s := SecretFromAPI(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db"},
		Type:       corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("hunter2")},
		StringData: map[string]string{"user": "admin"},
	})
	if s.GetType() != "Opaque" || string(s.GetData()["password"]) != "hunter2" || string(s.GetData()["user"]) != "admin" ||
		s.GetImmutable() || s.GetAnnotations()[manifest.SourceAnnotation] != kubeconv.SourceAPI {
		t.Errorf("SecretFromAPI = %v", s)
	}
}

// plannerClient serves srv over bufconn and returns a client of it: the
// planner every test of this package talks to.
func plannerClient(t *testing.T, srv plannerv1.PlannerServiceServer) plannerv1.PlannerServiceClient {
	t.Helper()
	return plannerv1.NewPlannerServiceClient(grpctest.Serve(t, func(s *grpc.Server) { plannerv1.RegisterPlannerServiceServer(s, srv) }))
}

// TestConfigReconcileRemovesOnlyUnreferencedCopiesOfTheAgent: what no
// bound pod references goes from the planner when the agent put it there
// (also left by an earlier run); copies from files or syncpodctl stay, as
// does everything a pod still references; their watches stop.
func TestConfigReconcileRemovesOnlyUnreferencedCopiesOfTheAgent(t *testing.T) {
	api := map[string]string{manifest.SourceAnnotation: kubeconv.SourceAPI}
	f := &plannertest.Planner{}
	f.PutConfigMap(
		&syncpodv1.ConfigMap{Namespace: "team", Name: "used", Annotations: api},
		&syncpodv1.ConfigMap{Namespace: "team", Name: "unused", Annotations: api},
		&syncpodv1.ConfigMap{Namespace: "team", Name: "from-file", Annotations: map[string]string{manifest.SourceAnnotation: manifest.SourceFile}},
		&syncpodv1.ConfigMap{Namespace: "team", Name: "by-hand"},
	)
	f.PutSecret(
		&syncpodv1.Secret{Namespace: "team", Name: "db", Annotations: api},
		&syncpodv1.Secret{Namespace: "other", Name: "db", Annotations: api},
	)
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{o: Options{Planner: plannerClient(t, f), Logger: slog.New(slog.DiscardHandler)}, m: m}
	c := newConfigs(t.Context(), a)
	stopped := map[string]bool{}
	for _, r := range []string{"configmap/team/used", "configmap/team/unused", "secret/other/db"} {
		ref, _ := parseConfigRef(r)
		c.watches[ref] = &configWatch{stop: func() { stopped[r] = true }}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "used"}}}}},
		Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "p"}}}}}},
	}}
	if err := c.reconcile(t.Context(), []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	deleted := f.Deleted()
	sort.Strings(deleted)
	if want := []string{"configmap/team/unused", "secret/other/db"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	if !stopped["configmap/team/unused"] || !stopped["secret/other/db"] || stopped["configmap/team/used"] {
		t.Errorf("watches stopped: %v", stopped)
	}
	if len(c.watches) != 1 {
		t.Errorf("watches left: %v", c.watches)
	}
	// Nothing bound: every copy of the agent goes, the others stay.
	if err := c.reconcile(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	left := f.ConfigMapKeys()
	if want := []string{"team/by-hand", "team/from-file"}; !slices.Equal(left, want) || len(f.SecretKeys()) != 0 {
		t.Errorf("left in the planner: %v and %d secrets, want %v and none", left, len(f.SecretKeys()), want)
	}
}

// listCounter counts the planner's ConfigMap and Secret listings.
type listCounter struct {
	plannerv1.PlannerServiceClient
	lists int
}

func (l *listCounter) ListConfigMaps(ctx context.Context, r *plannerv1.ListConfigMapsRequest, o ...grpc.CallOption) (*plannerv1.ListConfigMapsResponse, error) {
	l.lists++
	return l.PlannerServiceClient.ListConfigMaps(ctx, r, o...)
}

func (l *listCounter) ListSecrets(ctx context.Context, r *plannerv1.ListSecretsRequest, o ...grpc.CallOption) (*plannerv1.ListSecretsResponse, error) {
	l.lists++
	return l.PlannerServiceClient.ListSecrets(ctx, r, o...)
}

// TestConfigReconcileLooksAtThePlannerOnlyWhenAReferenceWent: the first
// reconcile lists the planner's copies (an earlier run may have left
// some); later ones do only when a reference went, so pods coming and
// their status changing cost the planner nothing, and a reference that
// goes is still removed.
func TestConfigReconcileLooksAtThePlannerOnlyWhenAReferenceWent(t *testing.T) {
	api := map[string]string{manifest.SourceAnnotation: kubeconv.SourceAPI}
	f := &plannertest.Planner{}
	f.PutConfigMap(&syncpodv1.ConfigMap{Namespace: "team", Name: "a", Annotations: api}, &syncpodv1.ConfigMap{Namespace: "team", Name: "b", Annotations: api})
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	counter := &listCounter{PlannerServiceClient: plannerClient(t, f)}
	a := &Agent{o: Options{Planner: counter, Logger: slog.New(slog.DiscardHandler)}, m: m}
	c := newConfigs(t.Context(), a)
	using := func(name string, cms ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
		for _, cm := range cms {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: cm, VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}})
		}
		return p
	}
	for _, step := range []struct {
		pods      []*corev1.Pod
		lists     int
		remaining []string
	}{
		{[]*corev1.Pod{using("one", "a", "b")}, 2, []string{"team/a", "team/b"}},
		{[]*corev1.Pod{using("one", "a", "b"), using("two")}, 2, []string{"team/a", "team/b"}},
		{[]*corev1.Pod{using("one", "a", "b"), using("two", "a")}, 2, []string{"team/a", "team/b"}},
		{[]*corev1.Pod{using("two", "a")}, 4, []string{"team/a"}},
		{[]*corev1.Pod{using("two", "a")}, 4, []string{"team/a"}},
	} {
		if err := c.reconcile(t.Context(), step.pods); err != nil {
			t.Fatal(err)
		}
		if counter.lists != step.lists || !slices.Equal(f.ConfigMapKeys(), step.remaining) {
			t.Fatalf("after %d pods: %d listings and %v in the planner, want %d and %v", len(step.pods), counter.lists, f.ConfigMapKeys(), step.lists, step.remaining)
		}
	}
}
