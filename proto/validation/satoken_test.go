package validation_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// kubeAPIAccessPod is the shape of the volume the API server's
// ServiceAccount admission adds to a pod: a token, the cluster's CA and
// the namespace. Checked as the API server checks it.
func kubeAPIAccessPod(source string, tok *syncpodv1.ServiceAccountTokenProjection) *syncpodv1.Pod {
	pod := volPod([]*syncpodv1.Volume{{Name: "kube-api-access-x7k2p", Source: &syncpodv1.Volume_Projected{Projected: &syncpodv1.ProjectedVolumeSource{
		DefaultMode: i32(0o644),
		Sources: []*syncpodv1.VolumeProjection{
			{Source: &syncpodv1.VolumeProjection_ServiceAccountToken{ServiceAccountToken: tok}},
			{Source: &syncpodv1.VolumeProjection_ConfigMap{ConfigMap: &syncpodv1.ConfigMapProjection{
				Name: "kube-root-ca.crt", Items: []*syncpodv1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}},
			{Source: &syncpodv1.VolumeProjection_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIProjection{Items: []*syncpodv1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}},
		}}}}}, &syncpodv1.Container{VolumeMounts: []*syncpodv1.VolumeMount{
		{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}})
	if source != "" {
		pod.Annotations = map[string]string{validation.SourceAnnotation: source}
	}
	return pod
}

func TestServiceAccountTokenAcceptedFromTheAPIServer(t *testing.T) {
	for _, tok := range []*syncpodv1.ServiceAccountTokenProjection{
		{ExpirationSeconds: 3607, Path: "token"},
		{Path: "token"}, // the API server's default lifetime
		{Audience: "vault", ExpirationSeconds: 600, Path: "dir/token"},
	} {
		if err := validation.Pod(kubeAPIAccessPod(validation.SourceAPI, tok)); err != nil {
			t.Errorf("%v: refused: %v", tok, err)
		}
	}
}

func TestServiceAccountTokenRefusedWithoutAnAPIServer(t *testing.T) {
	for _, source := range []string{"", "file"} {
		err := validation.Pod(kubeAPIAccessPod(source, &syncpodv1.ServiceAccountTokenProjection{ExpirationSeconds: 3607, Path: "token"}))
		fes := fielderr.As(err)
		if len(fes) != 1 || fes[0].Path != "spec.volumes[0].projected.sources[0].service_account_token" {
			t.Fatalf("source %q: got %v, want one error on the token source", source, err)
		}
		if !strings.Contains(fes[0].Message, "issued by the Kubernetes API server") {
			t.Errorf("message does not say why: %q", fes[0].Message)
		}
	}
}

func TestServiceAccountTokenChecksAsTheAPIServer(t *testing.T) {
	cases := []struct {
		name string
		tok  *syncpodv1.ServiceAccountTokenProjection
		want string
	}{
		{"under ten minutes", &syncpodv1.ServiceAccountTokenProjection{ExpirationSeconds: 599, Path: "token"}, ".expiration_seconds"},
		{"over 2^32 seconds", &syncpodv1.ServiceAccountTokenProjection{ExpirationSeconds: 1<<32 + 1, Path: "token"}, ".expiration_seconds"},
		{"no path", &syncpodv1.ServiceAccountTokenProjection{ExpirationSeconds: 3600}, ".path"},
		{"absolute path", &syncpodv1.ServiceAccountTokenProjection{Path: "/token"}, ".path"},
		{"escaping path", &syncpodv1.ServiceAccountTokenProjection{Path: "../token"}, ".path"},
		{"reserved path", &syncpodv1.ServiceAccountTokenProjection{Path: "..data"}, ".path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errPaths(validation.Pod(kubeAPIAccessPod(validation.SourceAPI, tc.tok)))
			want := "spec.volumes[0].projected.sources[0].service_account_token" + tc.want
			if !slices.Equal(got, []string{want}) {
				t.Errorf("errors at %v, want [%s]", got, want)
			}
		})
	}
}

func TestTokenSecretNameIsAnObjectName(t *testing.T) {
	n := validation.TokenSecretName("6B1F0E4A-55C2-4D3E-9F00-1A2B3C4D5E6F")
	if p := validation.NameProblem(n); p != "" {
		t.Errorf("%s: %s", n, p)
	}
	if p := validation.ConfigKeyProblem(validation.TokenSecretKey("kube-api-access-x7k2p", 0)); p != "" {
		t.Errorf("key: %s", p)
	}
}
