package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// kubeAPIAccess is the projected volume the API server adds to a pod: its
// service account token, the cluster's CA (here with a mode of its own)
// and its namespace, written as the kubelet writes it and
// mounted read-only.
func kubeAPIAccess() *syncpodv1.Volume {
	return &syncpodv1.Volume{Name: "kube-api-access-x7k2p", Source: &syncpodv1.Volume_Projected{Projected: &syncpodv1.ProjectedVolumeSource{
		DefaultMode: i32(0o644),
		Sources: []*syncpodv1.VolumeProjection{
			{Source: &syncpodv1.VolumeProjection_ServiceAccountToken{ServiceAccountToken: &syncpodv1.ServiceAccountTokenProjection{
				ExpirationSeconds: 3607, Path: "token"}}},
			{Source: &syncpodv1.VolumeProjection_ConfigMap{ConfigMap: &syncpodv1.ConfigMapProjection{
				Name: "kube-root-ca.crt", Items: []*syncpodv1.KeyToPath{{Key: "ca.crt", Path: "ca.crt", Mode: i32(0o600)}}}}},
			{Source: &syncpodv1.VolumeProjection_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIProjection{Items: []*syncpodv1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}},
		}}}}
}

func tokenSources(pod *syncpodv1.Pod, token string) Sources {
	var secrets []*syncpodv1.Secret
	if token != "" {
		secrets = append(secrets, &syncpodv1.Secret{Name: validation.TokenSecretName(pod.GetUid()), Namespace: "shop",
			Data: map[string][]byte{validation.TokenSecretKey("kube-api-access-x7k2p", 0): []byte(token)}})
	}
	return NewSources([]*syncpodv1.ConfigMap{{Name: "kube-root-ca.crt", Namespace: "shop",
		Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n"}}}, secrets)
}

func TestServiceAccountTokenVolumeWritesTokenCAAndNamespace(t *testing.T) {
	m := newManager(t)
	pod := testPod(kubeAPIAccess())
	paths, err := m.Setup(pod, tokenSources(pod, "eyJhbGciOi.first"))
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["kube-api-access-x7k2p"]
	for name, want := range map[string]struct {
		data string
		mode os.FileMode
	}{
		"token":     {"eyJhbGciOi.first", 0o644},
		"ca.crt":    {"-----BEGIN CERTIFICATE-----\n", 0o600},
		"namespace": {"shop", 0o644},
	} {
		p := filepath.Join(dir, name)
		if got := read(t, p); got != want.data {
			t.Errorf("%s = %q, want %q", name, got, want.data)
		}
		if got := mode(t, p); got != want.mode {
			t.Errorf("%s mode = %o, want %o", name, got, want.mode)
		}
		// The kubelet's atomic layout: each visible name is a link
		// through ..data.
		if l, err := os.Readlink(p); err != nil || l != filepath.Join("..data", name) {
			t.Errorf("%s links to %q (%v), want ..data/%s", name, l, err, name)
		}
	}

	// The mount of every container is read-only, whatever the pod says.
	mounts, err := Mounts(pod, &syncpodv1.Container{VolumeMounts: []*syncpodv1.VolumeMount{
		{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}, paths, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || !mounts[0].GetReadonly() || mounts[0].GetHostPath() != dir {
		t.Errorf("mounts = %v, want %s read-only", mounts, dir)
	}
}

func TestServiceAccountTokenRefreshRewritesTheFileInPlace(t *testing.T) {
	m := newManager(t)
	pod := testPod(kubeAPIAccess())
	paths, err := m.Setup(pod, tokenSources(pod, "eyJhbGciOi.first"))
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["kube-api-access-x7k2p"]
	before, _ := os.Readlink(filepath.Join(dir, "..data"))

	up, errs := m.Update(pod, tokenSources(pod, "eyJhbGciOi.second"))
	if len(errs) != 0 || len(up) != 1 || up[0] != "kube-api-access-x7k2p" {
		t.Fatalf("update = %v %v", up, errs)
	}
	after, _ := os.Readlink(filepath.Join(dir, "..data"))
	if after == before {
		t.Fatal("..data was not swapped")
	}
	// Same directory (what the container has mounted), new token.
	if got := read(t, filepath.Join(dir, "token")); got != "eyJhbGciOi.second" {
		t.Errorf("token after refresh = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, before)); !os.IsNotExist(err) {
		t.Errorf("old data directory kept: %v", err)
	}
}

func TestServiceAccountTokenNotIssuedFailsTheVolumeWithoutTheToken(t *testing.T) {
	m := newManager(t)
	pod := testPod(kubeAPIAccess())
	_, err := m.Setup(pod, tokenSources(pod, ""))
	if err == nil || !strings.Contains(err.Error(), "not issued yet") {
		t.Fatalf("setup without a token: %v", err)
	}

	// Set up, then the token Secret is gone: the old token stays, and
	// no error names the token.
	paths, err := m.Setup(pod, tokenSources(pod, "eyJhbGciOi.first"))
	if err != nil {
		t.Fatal(err)
	}
	_, errs := m.Update(pod, tokenSources(pod, ""))
	if len(errs) != 1 || strings.Contains(errs[0].Error(), "eyJhbGciOi") {
		t.Fatalf("errors %v", errs)
	}
	if got := read(t, filepath.Join(paths["kube-api-access-x7k2p"], "token")); got != "eyJhbGciOi.first" {
		t.Errorf("token = %q", got)
	}
}
