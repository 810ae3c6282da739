package node

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/planner/manifest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Service account tokens. The agent asks the API server for the
// token of every projected serviceAccountToken source of its pods
// (TokenRequest, bound to the pod), keeps each until it must be
// refreshed, as the kubelet's token manager does, and hands a pod's
// tokens to the planner as the pod's token Secret
// (validation.TokenSecretName). The planner treats it as any Secret: it
// is never logged, a list returns only its key names and sizes, and a
// change rewrites the projected file in place (no spec, no hash changes).

// Token lifetimes, as the kubelet's token manager has them.
const (
	// tokenMaxTTL is the longest a token is used before it is refreshed,
	// whatever its expiry.
	tokenMaxTTL = 24 * time.Hour
	// tokenMaxJitter bounds the random advance of a refresh.
	tokenMaxJitter = 10 * time.Second
	// tokenRefreshPeriod is how often the agent looks for tokens due
	// for a refresh.
	tokenRefreshPeriod = time.Minute
	// tokenSecretType is the type of a pod's token Secret.
	tokenSecretType = "syncpod.io/service-account-token"
)

// tokenCreator issues a token for service account name of namespace
// (the API server's TokenRequest).
type tokenCreator func(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)

// tokenKey identifies a cached token: what the request asks for.
type tokenKey struct {
	namespace, serviceAccount string
	audience                  string
	expirationSeconds         int64
	pod                       types.UID
}

// tokenManager caches tokens and refreshes them as the kubelet's
// pkg/kubelet/token manager does: a cached token is returned until it
// is within 20 % of its lifetime of expiring (used for 80 % of it) or was
// issued 24 h ago, each less a random jitter of up to 10 s; a failed
// refresh keeps a token that has not expired.
type tokenManager struct {
	create tokenCreator
	now    func() time.Time
	// jitter is the random advance of each refresh check.
	jitter func() time.Duration

	mu    sync.Mutex
	cache map[tokenKey]*authenticationv1.TokenRequest
}

func newTokenManager(create tokenCreator, now func() time.Time) *tokenManager {
	return &tokenManager{create: create, now: now, cache: map[tokenKey]*authenticationv1.TokenRequest{},
		jitter: func() time.Duration {
			return time.Duration(rand.Float64()*tokenMaxJitter.Seconds()) * time.Second
		}}
}

// token returns a valid token of service account sa for the pod,
// audience and lifetime (seconds), from the cache or newly issued.
func (m *tokenManager) token(ctx context.Context, pod *corev1.Pod, sa, audience string, expirationSeconds int64) (*authenticationv1.TokenRequest, error) {
	key := tokenKey{namespace: pod.Namespace, serviceAccount: sa, audience: audience, expirationSeconds: expirationSeconds, pod: pod.UID}
	m.mu.Lock()
	cached, ok := m.cache[key]
	m.mu.Unlock()
	if ok && !m.requiresRefresh(cached) {
		return cached, nil
	}
	var auds []string
	if audience != "" {
		auds = []string{audience}
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         auds,
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	tr, err := m.create(ctx, pod.Namespace, sa, req)
	if err == nil && (tr == nil || tr.Status.Token == "") {
		err = errors.New("the API server returned no token")
	}
	if err != nil {
		// The error is the API server's answer: it never holds a token.
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case m.expired(cached):
			return nil, fmt.Errorf("token of service account %s/%s expired and refresh failed: %w", pod.Namespace, sa, err)
		default:
			return cached, nil
		}
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = &expirationSeconds
	}
	m.mu.Lock()
	m.cache[key] = tr
	m.mu.Unlock()
	return tr, nil
}

// requiresRefresh says whether tr must be replaced now.
func (m *tokenManager) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	now := m.now()
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	iat := exp.Add(-ttl)
	jitter := m.jitter()
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-ttl*20/100 - jitter))
}

func (m *tokenManager) expired(tr *authenticationv1.TokenRequest) bool {
	return m.now().After(tr.Status.ExpirationTimestamp.Time)
}

// forgetExcept drops the tokens of pods not in keep, and expired ones.
func (m *tokenManager) forgetExcept(keep map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tr := range m.cache {
		if !keep[k.pod] || m.expired(tr) {
			delete(m.cache, k)
		}
	}
}

// hasServiceAccountToken reports whether the API pod has a projected
// serviceAccountToken source.
func hasServiceAccountToken(kp *corev1.Pod) bool {
	for _, v := range kp.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}

// podTokenSecret obtains every token of kp's serviceAccountToken sources
// (audience, expirationSeconds defaulted to an hour as the API server
// does, the pod as the bound object) and returns the pod's token Secret;
// nil when the pod has no such source. All sources are tried; the error
// joins those that failed (their keys are missing from the Secret).
func podTokenSecret(ctx context.Context, m *tokenManager, kp *corev1.Pod) (*syncpodv1.Secret, error) {
	if !hasServiceAccountToken(kp) {
		return nil, nil
	}
	sa := kp.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	data := map[string][]byte{}
	var errs []error
	for _, v := range kp.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for i, s := range v.Projected.Sources {
			tp := s.ServiceAccountToken
			if tp == nil {
				continue
			}
			exp := int64(validation.DefaultTokenExpirationSeconds)
			if tp.ExpirationSeconds != nil {
				exp = *tp.ExpirationSeconds
			}
			tr, err := m.token(ctx, kp, sa, tp.Audience, exp)
			if err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
				continue
			}
			data[validation.TokenSecretKey(v.Name, i)] = []byte(tr.Status.Token)
		}
	}
	return &syncpodv1.Secret{
		Name: validation.TokenSecretName(string(kp.UID)), Namespace: kp.Namespace,
		Annotations: map[string]string{manifest.SourceAnnotation: kubeconv.SourceAPI, tokenPodAnnotation: kp.Name},
		Type:        tokenSecretType, Data: data,
	}, errors.Join(errs...)
}

// tokenPodAnnotation names, on a token Secret, the pod it is for.
const tokenPodAnnotation = "syncpod.io/pod"

// tokenSecretRef is the reference of kp's token Secret, for the
// reconcile of the agent's copies in the planner.
func tokenSecretRef(kp *corev1.Pod) configRef {
	return configRef{Kind: kindSecret, Namespace: kp.Namespace, Name: validation.TokenSecretName(string(kp.UID))}
}

// prepareTokens hands the planner kp's current tokens (a Secret applied
// only when one changed). A token the API server did not issue is
// reported; the tokens obtained are handed over all the same, and the
// volume waits for the rest (the executor fails its setup until then).
func (a *Agent) prepareTokens(ctx context.Context, kp *corev1.Pod) error {
	sec, err := podTokenSecret(ctx, a.tokens, kp)
	if sec == nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, plannerCallTimeout)
	defer cancel()
	resp, aerr := a.o.Planner.ApplySecret(cctx, &plannerv1.ApplySecretRequest{Secret: sec})
	if aerr != nil {
		return errors.Join(err, fmt.Errorf("hand the service account tokens to the planner: %w", aerr))
	}
	if resp.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
		a.m.tokenHandovers.Inc()
		a.o.Logger.Info("service account tokens handed to the planner", "pod", kp.Namespace+"/"+kp.Name,
			"secret", sec.GetName(), "tokens", len(sec.GetData()))
	}
	return err
}

// runTokenRefresh, every minute, renews the tokens of the bound pods
// that are due (the manager hands back cached ones otherwise) and forgets
// those of pods no longer bound, as the kubelet's volume manager remounts
// projected volumes periodically.
func (a *Agent) runTokenRefresh(ctx context.Context) error {
	for {
		if !sleep(ctx, tokenRefreshPeriod) {
			return nil
		}
		a.refreshTokens(ctx)
	}
}

func (a *Agent) refreshTokens(ctx context.Context) {
	pods, err := a.BoundPods()
	if err != nil {
		return
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].UID < pods[j].UID })
	keep := map[types.UID]bool{}
	for _, kp := range pods {
		if !hasServiceAccountToken(kp) || kp.DeletionTimestamp != nil ||
			kp.Status.Phase == corev1.PodSucceeded || kp.Status.Phase == corev1.PodFailed {
			continue
		}
		if _, mirror := kp.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		keep[kp.UID] = true
		if err := a.prepareTokens(ctx, kp); err != nil && ctx.Err() == nil {
			a.o.Logger.Warn("cannot refresh service account tokens", "pod", kp.Namespace+"/"+kp.Name, "err", err)
		}
	}
	a.tokens.forgetExcept(keep)
}
