package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestAPIObjectReference names the kind of API object a pod refers to as
// the kubelet does for a static pod, also for the fields the
// manifest reader refuses anyway.
func TestAPIObjectReference(t *testing.T) {
	vol := func(s corev1.VolumeSource) corev1.PodSpec {
		return corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: s}}}
	}
	proj := func(p corev1.VolumeProjection) corev1.PodSpec {
		return vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{p}}})
	}
	secretEnv := []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{"nothing", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, ""},
		{"emptyDir and hostPath", corev1.PodSpec{Volumes: []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}}}}, ""},
		{"deprecated service account", corev1.PodSpec{DeprecatedServiceAccount: "sa"}, "serviceaccounts"},
		{"image pull secret", corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg"}}}, "secrets"},
		{"empty image pull secret name", corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{}}}, ""},
		{"secret in an ephemeral container", corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "d", Env: secretEnv}}}}, "secrets"},
		{"service account before secrets", corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "c", Env: secretEnv}}}, "serviceaccounts"},
		{"resource claim", corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu"}}}, "resourceclaims"},
		{"claim volume", vol(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}), "persistentvolumeclaims"},
		{"ephemeral volume", vol(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}), "persistentvolumeclaims (via ephemeral volumes)"},
		{"CSI volume", vol(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}), "csidrivers (via CSI volumes)"},
		{"CSI volume with a secret", vol(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "s"}}}), "secrets"},
		{"glusterfs volume", vol(corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{}}), "endpoints (via glusterFS volumes)"},
		{"rbd secret", vol(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "s"}}}), "secrets"},
		{"projected token", proj(corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}), "serviceaccounts (via projected volumes)"},
		{"cluster trust bundle", proj(corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "b"}}), "clustertrustbundles"},
		{"pod certificate", proj(corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{}}), "podcertificates"},
		{"configMap volume without a name", vol(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}), "configmaps (via configmap volumes)"},
		{"downward API only", proj(corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{}}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apiObjectReference(&corev1.Pod{Spec: tc.spec}); got != tc.want {
				t.Errorf("apiObjectReference = %q, want %q", got, tc.want)
			}
		})
	}
}
