package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// TestKubernetesConfigMapsAndSecretsFromTheAPIServer: a pod on a syncpod
// node mounts a ConfigMap and reads a Secret into an env var, both from
// the API server; the agent mirrors into the planner only the objects its
// pods reference; a ConfigMap update reaches the mounted file without a
// restart; once no pod references them they leave the planner.
func TestKubernetesConfigMapsAndSecretsFromTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel()
	cp := startControlPlane(t)
	ctx := context.Background()
	n := startK8sNode(t, cp, "syncpod-e2e-config")
	objects := `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {app.conf: version-one}
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {pw: opensesame}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-referenced}
data: {other: "value"}
`
	if out, err := cp.kubectlStdin(objects, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  nodeName: %s
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  volumes:
  - name: config
    configMap: {name: app-config}
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "echo pw=$PW; while true; do echo conf=$(cat /etc/app/app.conf); sleep 0.5; done"]
    env:
    - name: PW
      valueFrom: {secretKeyRef: {name: db, key: pw}}
    volumeMounts:
    - {name: config, mountPath: /etc/app}
`, n.name)
	if out, err := cp.kubectlStdin(pod, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply pod: %v\n%s", err, out)
	}
	pods := cp.client.CoreV1().Pods(metav1.NamespaceDefault)
	eventually(t, 60*time.Second, "reader Running", func() (bool, string) {
		p, err := pods.Get(ctx, "reader", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, podSummary(p)
	})
	eventually(t, 30*time.Second, "the Secret in the env and the ConfigMap in the file", func() (bool, string) {
		out, _ := cp.kubectl("logs", "reader")
		return strings.Contains(out, "pw=opensesame\n") && strings.Contains(out, "conf=version-one\n"), out
	})
	// Only what the pod references is in the planner, marked as the
	// agent's.
	cm, err := n.pods.GetConfigMap(rpcCtx(t), &plannerv1.GetConfigMapRequest{Ref: &plannerv1.ConfigObjectRef{Namespace: "default", Name: "app-config"}})
	if err != nil || cm.GetConfigMap().GetAnnotations()["kubernetes.io/config.source"] != "api" {
		t.Errorf("app-config in the planner: %v %v", cm, err)
	}
	if _, err := n.pods.GetSecret(rpcCtx(t), &plannerv1.GetSecretRequest{Ref: &plannerv1.ConfigObjectRef{Namespace: "default", Name: "db"}}); err != nil {
		t.Errorf("Secret db in the planner: %v", err)
	}
	if _, err := n.pods.GetConfigMap(rpcCtx(t), &plannerv1.GetConfigMapRequest{Ref: &plannerv1.ConfigObjectRef{Namespace: "default", Name: "not-referenced"}}); status.Code(err) != codes.NotFound {
		t.Errorf("a ConfigMap no pod of the node references is in its planner: %v", err)
	}
	before, err := pods.Get(ctx, "reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The ConfigMap changes on the API server: the file follows.
	cp.mustKubectl("patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"app.conf":"version-two"}}`)
	eventually(t, 60*time.Second, "the mounted file updated", func() (bool, string) {
		out, _ := cp.kubectl("logs", "reader", "--tail=2")
		return strings.Contains(out, "conf=version-two\n"), out
	})
	after, err := pods.Get(ctx, "reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := after.Status.ContainerStatuses, before.Status.ContainerStatuses; len(a) != 1 || len(b) != 1 || a[0].ContainerID != b[0].ContainerID || a[0].RestartCount != 0 {
		t.Errorf("the container restarted for a ConfigMap change: before %s, after %s", podSummary(before), podSummary(after))
	}

	// No pod references them any more: they leave the planner.
	cp.mustKubectl("delete", "pod", "reader", "--timeout=60s")
	eventually(t, 60*time.Second, "ConfigMap and Secret gone from the planner", func() (bool, string) {
		_, errCM := n.pods.GetConfigMap(rpcCtx(t), &plannerv1.GetConfigMapRequest{Ref: &plannerv1.ConfigObjectRef{Namespace: "default", Name: "app-config"}})
		_, errS := n.pods.GetSecret(rpcCtx(t), &plannerv1.GetSecretRequest{Ref: &plannerv1.ConfigObjectRef{Namespace: "default", Name: "db"}})
		return status.Code(errCM) == codes.NotFound && status.Code(errS) == codes.NotFound, fmt.Sprintf("configmap: %v; secret: %v", errCM, errS)
	})
}
