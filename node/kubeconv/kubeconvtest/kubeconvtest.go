// Package kubeconvtest holds Kubernetes objects shaped as the API server
// stores them, for the tests of the conversions and of the node agent.
package kubeconvtest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// APIPod is a pod as the API server stores it after admission: defaults
// filled in, the service-account token volume injected.
func APIPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "team", UID: "1f0e2a3b-0000-4000-8000-000000000001",
			GenerateName: "web-", ResourceVersion: "42", CreationTimestamp: metav1.Now(),
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{"note": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "u"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1", SchedulerName: "default-scheduler", DNSPolicy: corev1.DNSClusterFirst,
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30),
			ServiceAccountName: "default", EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
			Priority: ptr.To[int32](0), SecurityContext: &corev1.PodSecurityContext{},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
			Volumes:     []corev1.Volume{KubeAPIAccess("kube-api-access-x7k2p")},
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "1000"},
				ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePath: "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
}

// KubeAPIAccess is the projected volume the API server's ServiceAccount
// admission adds to a pod, as it stores it: the token (3607 seconds), the
// cluster's CA from ConfigMap kube-root-ca.crt and the namespace.
func KubeAPIAccess(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}
