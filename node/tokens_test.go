package node

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncpod/syncpod/internal/grpctest"

	"google.golang.org/grpc"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
	"github.com/syncpod/syncpod/planner/service"
	"github.com/syncpod/syncpod/planner/store"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// fakeTokens is the API server's TokenRequest: each call issues a new
// token ("tok-1", "tok-2", ...) that expires after the requested lifetime,
// from the clock's now.
type fakeTokens struct {
	mu    sync.Mutex
	now   func() time.Time
	err   error
	calls []fakeTokenCall
}

type fakeTokenCall struct {
	namespace, serviceAccount string
	req                       *authenticationv1.TokenRequest
}

func (f *fakeTokens) create(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeTokenCall{ns, sa, tr.DeepCopy()})
	if f.err != nil {
		return nil, f.err
	}
	out := tr.DeepCopy()
	out.Status.Token = "tok-" + string(rune('0'+len(f.calls)))
	out.Status.ExpirationTimestamp = metav1.NewTime(f.now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

func (f *fakeTokens) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// clock is a settable now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

var tokenT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newFakeTokenManager() (*tokenManager, *fakeTokens, *clock) {
	c := &clock{t: tokenT0}
	f := &fakeTokens{now: c.now}
	m := newTokenManager(f.create, c.now)
	m.jitter = func() time.Duration { return 0 }
	return m, f, c
}

// tokenPod is an API pod with the API server's kube-api-access volume
// and a second token for another audience, with the default lifetime.
func tokenPod() *corev1.Pod {
	kp := kubeconvtest.APIPod()
	kp.Spec.ServiceAccountName = "builder"
	kp.Spec.Volumes = append(kp.Spec.Volumes, corev1.Volume{Name: "vault", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources:     []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "vault-token"}}},
	}}})
	return kp
}

// each token is asked for as the kubelet asks: the pod's service
// account in its namespace, the source's audience (none: the API
// server's), its lifetime (an hour when unset), bound to the pod.
func TestTokenRequestsAsTheKubelet(t *testing.T) {
	m, f, _ := newFakeTokenManager()
	kp := tokenPod()
	sec, err := podTokenSecret(t.Context(), m, kp)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 {
		t.Fatalf("%d token requests, want 2", len(f.calls))
	}
	for i, want := range []struct {
		auds []string
		exp  int64
	}{{nil, 3607}, {[]string{"vault"}, 3600}} {
		c := f.calls[i]
		if c.namespace != "team" || c.serviceAccount != "builder" {
			t.Errorf("request %d for %s/%s, want team/builder", i, c.namespace, c.serviceAccount)
		}
		s := c.req.Spec
		if strings.Join(s.Audiences, ",") != strings.Join(want.auds, ",") || s.ExpirationSeconds == nil || *s.ExpirationSeconds != want.exp {
			t.Errorf("request %d: audiences %v, expiration %v; want %v, %d", i, s.Audiences, s.ExpirationSeconds, want.auds, want.exp)
		}
		if r := s.BoundObjectRef; r == nil || r.APIVersion != "v1" || r.Kind != "Pod" || r.Name != kp.Name || r.UID != kp.UID {
			t.Errorf("request %d bound to %+v, want the pod", i, r)
		}
	}
	if sec.GetName() != validation.TokenSecretName(string(kp.UID)) || sec.GetNamespace() != "team" ||
		string(sec.GetData()["kube-api-access-x7k2p.0"]) != "tok-1" || string(sec.GetData()["vault.0"]) != "tok-2" {
		t.Errorf("token Secret %s/%s with keys %v", sec.GetNamespace(), sec.GetName(), sec.GetDataSizes())
	}
	// A pod without a token source has no Secret and asks nothing.
	kp.Spec.Volumes = nil
	if sec, err := podTokenSecret(t.Context(), m, kp); sec != nil || err != nil || len(f.calls) != 2 {
		t.Errorf("tokenless pod: %v %v, %d requests", sec, err, len(f.calls))
	}
}

// a token is used for 80 % of its lifetime, then asked again.
func TestTokenRefreshedAtEightyPercentOfItsLife(t *testing.T) {
	m, f, c := newFakeTokenManager()
	kp := kubeconvtest.APIPod()
	get := func() string {
		t.Helper()
		tr, err := m.token(t.Context(), kp, "default", "", 3600)
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	if got := get(); got != "tok-1" {
		t.Fatalf("first token %q", got)
	}
	c.set(tokenT0.Add(2880*time.Second - time.Second)) // just under 80 % of an hour
	if got := get(); got != "tok-1" || f.count() != 1 {
		t.Fatalf("before 80 %%: %q after %d requests, want the cached token", got, f.count())
	}
	c.set(tokenT0.Add(2880*time.Second + time.Second))
	if got := get(); got != "tok-2" || f.count() != 2 {
		t.Fatalf("after 80 %%: %q after %d requests, want a new token", got, f.count())
	}
	// The jitter brings the refresh forward by up to 10 s.
	m.jitter = func() time.Duration { return 10 * time.Second }
	c.set(tokenT0.Add(2880*time.Second + time.Second + 2880*time.Second - 9*time.Second))
	if got := get(); got != "tok-3" {
		t.Errorf("within the jitter of 80 %%: %q, want a new token", got)
	}
}

// a long-lived token is used at most 24 h.
func TestTokenRefreshedAfterADayWhateverItsLife(t *testing.T) {
	m, f, c := newFakeTokenManager()
	kp := kubeconvtest.APIPod()
	week := int64(7 * 24 * 3600)
	if _, err := m.token(t.Context(), kp, "default", "", week); err != nil {
		t.Fatal(err)
	}
	c.set(tokenT0.Add(24*time.Hour - time.Second))
	if tr, _ := m.token(t.Context(), kp, "default", "", week); tr.Status.Token != "tok-1" {
		t.Fatalf("before a day: %q", tr.Status.Token)
	}
	c.set(tokenT0.Add(24*time.Hour + time.Second))
	if tr, _ := m.token(t.Context(), kp, "default", "", week); tr.Status.Token != "tok-2" || f.count() != 2 {
		t.Fatalf("after a day: %q after %d requests", tr.Status.Token, f.count())
	}
}

// a refresh the API server refuses keeps the token while it is
// valid; an expired one is an error, which never carries the token.
func TestTokenRefreshFailureKeepsAValidToken(t *testing.T) {
	m, f, c := newFakeTokenManager()
	kp := kubeconvtest.APIPod()
	if _, err := m.token(t.Context(), kp, "default", "", 3600); err != nil {
		t.Fatal(err)
	}
	f.err = errors.New(`serviceaccounts "default" is forbidden`)
	c.set(tokenT0.Add(50 * time.Minute))
	if tr, err := m.token(t.Context(), kp, "default", "", 3600); err != nil || tr.Status.Token != "tok-1" {
		t.Fatalf("failed refresh of a valid token: %v %v", tr, err)
	}
	c.set(tokenT0.Add(61 * time.Minute))
	_, err := m.token(t.Context(), kp, "default", "", 3600)
	if err == nil || strings.Contains(err.Error(), "tok-1") || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("failed refresh of an expired token: %v", err)
	}
	// A pod no longer bound loses its tokens.
	f.err = nil
	m.forgetExcept(nil)
	if len(m.cache) != 0 {
		t.Errorf("cache after forgetting: %d tokens", len(m.cache))
	}
}

// tokenPlanner is a real planner service (store in a temp dir) behind
// bufconn, so the Secret a token travels in is held and listed as the
// planner holds and lists Secrets.
func tokenPlanner(t *testing.T) plannerv1.PlannerServiceClient {
	t.Helper()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "planner.db"), Validate: validation.Pod})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() }) // after the server stops
	conn := grpctest.Serve(t, func(srv *grpc.Server) {
		plannerv1.RegisterPlannerServiceServer(srv, service.New(service.Options{Pods: st, Config: st}))
	})
	return plannerv1.NewPlannerServiceClient(conn)
}

// syncing a pod hands its tokens to the planner before the pod, as
// its token Secret; a refresh changes the Secret, not the pod (same
// generation); no log line and no list answer holds a token.
func TestPodTokensReachThePlannerNeverLoggedNorListed(t *testing.T) {
	planner := tokenPlanner(t)
	var logs bytes.Buffer
	m, f, c := newFakeTokenManager()
	// The token volume alone: its CA ConfigMap would need an API server.
	kp := kubeconvtest.APIPod()
	kp.Spec.Volumes[0].Projected.Sources = kp.Spec.Volumes[0].Projected.Sources[:1]
	a, _, pods := admissionAgent(t, &admitPlanner{}, kp)
	a.o.Planner, a.tokens = planner, m
	a.o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	key := kp.Namespace + "/" + kp.Name
	if err := a.syncPod(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	ref := &plannerv1.ConfigObjectRef{Namespace: "team", Name: validation.TokenSecretName(string(kp.UID))}
	revealed := func() string {
		t.Helper()
		g, err := planner.GetSecret(t.Context(), &plannerv1.GetSecretRequest{Ref: ref, Reveal: true})
		if err != nil {
			t.Fatal(err)
		}
		return string(g.GetSecret().GetData()["kube-api-access-x7k2p.0"])
	}
	if got := revealed(); got != "tok-1" {
		t.Fatalf("token in the planner %q", got)
	}
	pod, err := planner.GetPod(t.Context(), &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Namespace: "team", Name: kp.Name}})
	if err != nil {
		t.Fatal(err)
	}
	gen := pod.GetRecord().GetPod().GetGeneration()

	// 80 % of 3607 s later the periodic refresh swaps the token.
	c.set(tokenT0.Add(2886 * time.Second))
	a.synced.Store(&a.lister)
	a.refreshTokens(t.Context())
	if got := revealed(); got != "tok-2" || f.count() != 2 {
		t.Fatalf("after the refresh: %q, %d requests", got, f.count())
	}
	if err := a.syncPod(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	pod, err = planner.GetPod(t.Context(), &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Namespace: "team", Name: kp.Name}})
	if err != nil || pod.GetRecord().GetPod().GetGeneration() != gen {
		t.Errorf("pod generation %d after a token refresh, want %d (%v)", pod.GetRecord().GetPod().GetGeneration(), gen, err)
	}

	l, err := planner.ListSecrets(t.Context(), &plannerv1.ListSecretsRequest{})
	if err != nil || len(l.GetSecrets()) != 1 || len(l.GetSecrets()[0].GetData()) != 0 {
		t.Fatalf("list: %v %v", l, err)
	}
	for _, tok := range []string{"tok-1", "tok-2"} {
		if strings.Contains(l.String(), tok) {
			t.Errorf("ListSecrets shows %s", tok)
		}
		if strings.Contains(logs.String(), tok) {
			t.Errorf("the logs show %s:\n%s", tok, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "service account tokens handed to the planner") {
		t.Errorf("no log of the handover:\n%s", logs.String())
	}

	// The pod gone from the node: the reconcile removes its token Secret.
	if err := pods.Delete(kp); err != nil {
		t.Fatal(err)
	}
	if err := a.cfg.reconcile(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if l, _ := planner.ListSecrets(t.Context(), &plannerv1.ListSecretsRequest{}); len(l.GetSecrets()) != 0 {
		t.Errorf("token Secret left: %v", l.GetSecrets())
	}
}

// the client's CreateToken posts a TokenRequest to the service
// account's token subresource and reads the issued token.
func TestClientCreateTokenPostsToTheTokenSubresource(t *testing.T) {
	var gotPath, gotMethod string
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotMethod = r.URL.Path, r.Method
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		gotBody = b.Bytes()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",` +
			`"spec":{"audiences":["vault"],"expirationSeconds":3607},` +
			`"status":{"token":"issued","expirationTimestamp":"2026-03-01T13:00:07Z"}}`))
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.CoreV1().CreateToken(t.Context(), "team", "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{"vault"}, ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "u-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if gotMethod != http.MethodPost || gotPath != "/api/v1/namespaces/team/serviceaccounts/builder/token" {
		t.Errorf("%s %s", gotMethod, gotPath)
	}
	for _, want := range []string{`"kind":"TokenRequest"`, `"apiVersion":"authentication.k8s.io/v1"`, `"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web","uid":"u-1"}`} {
		if !bytes.Contains(gotBody, []byte(want)) {
			t.Errorf("body %s lacks %s", gotBody, want)
		}
	}
	if tr.Status.Token != "issued" || !tr.Status.ExpirationTimestamp.Time.Equal(time.Date(2026, 3, 1, 13, 0, 7, 0, time.UTC)) {
		t.Errorf("token request %+v", tr.Status)
	}
}
