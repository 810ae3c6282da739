package kubeconv

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestConvertManifestUsesTheManifestRules(t *testing.T) {
	js, err := yaml.YAMLToJSON([]byte(`
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  nodeSelector: {disk: ssd}
  restartPolicy: OnFailure
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "sleep 3600"]
`))
	if err != nil {
		t.Fatal(err)
	}
	pod, warnings, err := ConvertManifest(js)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	if pod.GetName() != "web" || pod.GetNamespace() != "shop" || pod.GetSpec().GetContainers()[0].GetCommand()[2] != "sleep 3600" {
		t.Fatalf("converted pod %v", pod)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "nodeSelector") {
		t.Fatalf("warnings %q, want one about nodeSelector", warnings)
	}
	bad, _ := yaml.YAMLToJSON([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, nfs: {server: s, path: /}}]\n  containers: [{name: a, image: b}]\n"))
	if _, _, err := ConvertManifest(bad); err == nil || !strings.Contains(err.Error(), "spec.volumes[0].nfs") {
		t.Fatalf("nfs volume accepted: %v", err)
	}
}
