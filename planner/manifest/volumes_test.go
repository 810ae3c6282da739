package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func i32p(v int32) *int32 { return &v }

func TestParseObjectsConvertsVolumesEnvSourcesAndConfigDocuments(t *testing.T) {
	objs, warns, err := ParseObjects(readTestdata(t, "volumes.yaml"))
	if err != nil {
		t.Fatalf("ParseObjects: %v", err)
	}
	if len(warns) != 0 || len(objs.Pods) != 1 || len(objs.ConfigMaps) != 1 || len(objs.Secrets) != 1 {
		t.Fatalf("objects %d pods %d configmaps %d secrets, warnings %v", len(objs.Pods), len(objs.ConfigMaps), len(objs.Secrets), warns)
	}
	cm := objs.ConfigMaps[0]
	if cm.GetName() != "web-config" || cm.GetNamespace() != "shop" || cm.GetData()["nginx.conf"] != "listen 80;\n" || string(cm.GetBinaryData()["logo.png"]) != "\x89PNG" {
		t.Errorf("configmap %v", cm)
	}
	sec := objs.Secrets[0]
	if string(sec.GetData()["password"]) != "s3cret" || string(sec.GetData()["user"]) != "admin" || sec.GetType() != "Opaque" {
		t.Errorf("secret %v", sec)
	}
	pod := objs.Pods[0]
	if err := validation.Pod(pod); err != nil {
		t.Fatalf("converted pod is invalid: %v", err)
	}
	vols := pod.GetSpec().GetVolumes()
	want := []*syncpodv1.Volume{
		{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}},
		{Name: "fast", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{Medium: syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY, SizeLimit: "64Mi"}}},
		{Name: "host", Source: &syncpodv1.Volume_HostPath{HostPath: &syncpodv1.HostPathVolumeSource{Path: "/var/log", Type: syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY}}},
		{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "web-config", DefaultMode: i32p(0o440), Optional: true,
			Items: []*syncpodv1.KeyToPath{{Key: "nginx.conf", Path: "conf/nginx.conf", Mode: i32p(0o400)}}}}},
		{Name: "sec", Source: &syncpodv1.Volume_Secret{Secret: &syncpodv1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "info", Source: &syncpodv1.Volume_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIVolumeSource{Items: []*syncpodv1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "mem", ResourceFieldRef: &syncpodv1.ResourceFieldSelector{ContainerName: "web", Resource: "limits.memory", Divisor: "1Mi"}}}}}},
		{Name: "all", Source: &syncpodv1.Volume_Projected{Projected: &syncpodv1.ProjectedVolumeSource{Sources: []*syncpodv1.VolumeProjection{
			{Source: &syncpodv1.VolumeProjection_ConfigMap{ConfigMap: &syncpodv1.ConfigMapProjection{Name: "web-config"}}},
			{Source: &syncpodv1.VolumeProjection_Secret{Secret: &syncpodv1.SecretProjection{Name: "creds", Items: []*syncpodv1.KeyToPath{{Key: "user", Path: "user"}}}}},
			{Source: &syncpodv1.VolumeProjection_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIProjection{Items: []*syncpodv1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		}}}},
	}
	if len(vols) != len(want) {
		t.Fatalf("volumes %v", vols)
	}
	for i := range want {
		if !proto.Equal(vols[i], want[i]) {
			t.Errorf("volume %d =\n%v\nwant\n%v", i, prototext.Format(vols[i]), prototext.Format(want[i]))
		}
	}
	c := pod.GetSpec().GetContainers()[0]
	if len(c.GetEnvFrom()) != 2 || c.GetEnvFrom()[1].GetPrefix() != "DB_" || !c.GetEnvFrom()[1].GetSecretRef().GetOptional() || c.GetEnvFrom()[0].GetConfigMapRef().GetName() != "web-config" {
		t.Errorf("envFrom %v", c.GetEnvFrom())
	}
	env := c.GetEnv()
	if env[0].GetValueFrom().GetSecretKeyRef().GetKey() != "password" || !env[1].GetValueFrom().GetConfigMapKeyRef().GetOptional() ||
		env[2].GetValueFrom().GetFieldRef().GetFieldPath() != "status.podIP" || env[3].GetValueFrom().GetResourceFieldRef().GetDivisor() != "1m" {
		t.Errorf("env %v", env)
	}
	vm := c.GetVolumeMounts()
	if len(vm) != 3 || vm[1].GetSubPath() != "conf/nginx.conf" || !vm[1].GetReadOnly() ||
		vm[2].GetMountPropagation() != syncpodv1.MountPropagation_MOUNT_PROPAGATION_HOST_TO_CONTAINER {
		t.Errorf("volumeMounts %v", vm)
	}
	// Parse (pods only) accepts the same file.
	if pods, _, err := Parse(readTestdata(t, "volumes.yaml")); err != nil || len(pods) != 1 {
		t.Errorf("Parse: %v %v", pods, err)
	}
}

func TestParseObjectsRefusesBadVolumesAndConfigDocumentsWithPaths(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes:
  - {name: a, hostPath: {path: /x, type: Weird}}
  - {name: b, emptyDir: {medium: HugePages}}
  containers:
  - name: c
    image: i
    volumeMounts: [{name: a, mountPath: /a, mountPropagation: Sideways}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, generateName: x}
data: {k: v}
extra: 1
---
apiVersion: v1
kind: Secret
metadata: {name: s}
data: {password: "not base64!"}
`
	_, _, err := ParseObjects([]byte(data))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v", err)
	}
	var got []string
	for _, is := range pe.Issues {
		got = append(got, is.String())
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		"spec.volumes[0].hostPath.type: must be",
		"spec.volumes[1].emptyDir.medium: must be",
		"spec.containers[0].volumeMounts[0].mountPropagation: must be",
		"document 1: extra: unknown field",
		"document 1: metadata.generateName: not supported",
		"document 2: data: values must be base64",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("issues lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "not base64!") {
		t.Error("a secret value was echoed")
	}
}

func TestSourceCarriesConfigObjects(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "cfg.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {p: x}\n")
	s := NewSource(Options{Dir: dir})
	d, err := s.Scan()
	if err != nil {
		t.Fatal(err)
	}
	keys := func(d Diff) string {
		var out []string
		for _, c := range d.ConfigChanges {
			out = append(out, c.Type.String()+" "+c.Key())
		}
		return strings.Join(out, ", ")
	}
	if got := keys(d); got != "added configmap/default/c, added secret/default/s" || len(d.Errors) != 0 {
		t.Fatalf("first scan: %s %v", got, d.Errors)
	}
	write(t, dir, "cfg.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v2}\n")
	d, _ = s.Scan()
	if got := keys(d); got != "updated configmap/default/c, removed secret/default/s" {
		t.Fatalf("second scan: %s", got)
	}
	// A failed apply is reported again on the next scan.
	s.RetryConfig(d.ConfigChanges[:1])
	d, _ = s.Scan()
	if got := keys(d); got != "added configmap/default/c" {
		t.Fatalf("after retry: %s", got)
	}
}

// TestConfigDocumentsSuggestTheFieldMeant: a misspelt key of a ConfigMap or
// Secret document is an unknown field named with the closest field of the
// Kubernetes type, as in a pod; a field Kubernetes has but syncpod does not
// take stays "not supported".
func TestConfigDocumentsSuggestTheFieldMeant(t *testing.T) {
	data := `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespce: x}
binaryDta: {k: AA==}
---
apiVersion: v1
kind: Secret
metadata: {name: s}
stringdata: {password: hunter2}
imutable: true
---
apiVersion: v1
kind: Secret
metdata: {name: s}
`
	_, _, err := ParseObjects([]byte(data))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v", err)
	}
	var got []string
	for _, is := range pe.Issues {
		got = append(got, is.String())
	}
	want := []string{
		"binaryDta: unknown field; did you mean `binaryData`?", // document 0 is not named
		"metadata.namespce: unknown field; did you mean `namespace`?",
		"document 1: imutable: unknown field; did you mean `immutable`?",
		"document 1: stringdata: unknown field; did you mean `stringData`?",
		"document 2: metdata: unknown field; did you mean `metadata`?",
		"document 2: metadata.name: required",
	}
	if !slices.Equal(got, want) {
		t.Errorf("issues:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(got, "\n"), "hunter2") {
		t.Error("a secret value was echoed")
	}
}

// TestServiceAccountTokenProjectionSaysWhyItIsRefused: a projected
// serviceAccountToken needs the API server's TokenRequest, which a
// standalone node does not have; the refusal says so.
func TestServiceAccountTokenProjectionSaysWhyItIsRefused(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox:1.36}]
  volumes:
  - name: token
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600}
`
	_, _, err := Parse([]byte(data))
	var pe *ParseError
	if !errors.As(err, &pe) || len(pe.Issues) != 1 {
		t.Fatalf("err %v", err)
	}
	got := pe.Issues[0].String()
	if !strings.HasPrefix(got, "spec.volumes[0].projected.sources[0].serviceAccountToken: not supported by a standalone syncpod: ") ||
		!strings.Contains(got, "API server") {
		t.Errorf("issue %q", got)
	}
}

// TestServiceAccountTokenProjectionOfAnAPIPodIsConverted: a pod from the
// API server keeps its token source, audience, lifetime and path.
func TestServiceAccountTokenProjectionOfAnAPIPodIsConverted(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {kubernetes.io/config.source: api}}
spec:
  containers: [{name: c, image: busybox:1.36}]
  volumes:
  - name: token
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken: {audience: vault, path: token, expirationSeconds: 3607}
`
	pods, _, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	got := pods[0].GetSpec().GetVolumes()[0].GetProjected().GetSources()[0].GetServiceAccountToken()
	want := &syncpodv1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: 3607, Path: "token"}
	if !proto.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestAppArmorAndSELinuxAreConverted: securityContext.appArmorProfile and
// seLinuxOptions, pod and container level, reach the pod; a bad profile
// type is refused with its path.
func TestAppArmorAndSELinuxAreConverted(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  securityContext:
    appArmorProfile: {type: Localhost, localhostProfile: k8s-nginx}
    seLinuxOptions: {type: spc_t, level: "s0:c1"}
  containers:
  - name: c
    image: busybox:1.36
    securityContext:
      appArmorProfile: {type: Unconfined}
      seLinuxOptions: {user: system_u, role: system_r}
`
	pods, _, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	psc, csc := pods[0].GetSpec().GetSecurityContext(), pods[0].GetSpec().GetContainers()[0].GetSecurityContext()
	if ap := psc.GetAppArmorProfile(); ap.GetType() != syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST || ap.GetLocalhostProfile() != "k8s-nginx" {
		t.Errorf("pod appArmorProfile %v", ap)
	}
	if se := psc.GetSeLinuxOptions(); se.GetType() != "spc_t" || se.GetLevel() != "s0:c1" {
		t.Errorf("pod seLinuxOptions %v", se)
	}
	if ap := csc.GetAppArmorProfile(); ap.GetType() != syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED {
		t.Errorf("container appArmorProfile %v", ap)
	}
	if se := csc.GetSeLinuxOptions(); se.GetUser() != "system_u" || se.GetRole() != "system_r" {
		t.Errorf("container seLinuxOptions %v", se)
	}
	_, _, err = Parse([]byte(strings.Replace(data, "type: Unconfined", "type: Strict", 1)))
	if err == nil || !strings.Contains(err.Error(), "spec.containers[0].securityContext.appArmorProfile.type: must be RuntimeDefault, Unconfined or Localhost") {
		t.Errorf("bad type: %v", err)
	}
}

// TestFSGroupChangePolicyIsCheckedAsTheAPIServerDoes: the two
// policies parse, anything else is refused naming the field.
func TestFSGroupChangePolicyIsCheckedAsTheAPIServerDoes(t *testing.T) {
	doc := func(policy string) []byte {
		return []byte(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  securityContext: {fsGroup: 2000, fsGroupChangePolicy: ` + policy + `}
  containers: [{name: c, image: busybox}]
`)
	}
	for _, ok := range []string{"Always", "OnRootMismatch"} {
		pods, _, err := Parse(doc(ok))
		if err != nil {
			t.Errorf("%s: %v", ok, err)
			continue
		}
		if g := pods[0].GetSpec().GetSecurityContext().GetFsGroup(); g != 2000 {
			t.Errorf("%s: fsGroup = %d, want 2000", ok, g)
		}
	}
	_, _, err := Parse(doc("Sometimes"))
	if err == nil || !strings.Contains(err.Error(), `spec.securityContext.fsGroupChangePolicy: must be "Always" or "OnRootMismatch", got "Sometimes"`) {
		t.Errorf("Sometimes: %v", err)
	}
}

// TestSubPathExprIsConvertedAndExclusiveWithSubPath: a volume
// mount's subPathExpr reaches the pod as written, for the executor to
// expand; one that also sets subPath converts, and the pod's validation
// refuses it at that mount's sub_path_expr, as the API server does.
func TestSubPathExprIsConvertedAndExclusiveWithSubPath(t *testing.T) {
	doc := func(mount string) []byte {
		return []byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: c
    image: i
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    volumeMounts: [` + mount + `]
`)
	}
	pods, _, err := Parse(doc(`{name: work, mountPath: /logs, subPathExpr: "$(POD_NAME)"}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	vm := pods[0].GetSpec().GetContainers()[0].GetVolumeMounts()[0]
	if vm.GetSubPathExpr() != "$(POD_NAME)" || vm.GetSubPath() != "" {
		t.Errorf("volume mount %v, want sub_path_expr $(POD_NAME) alone", vm)
	}
	if err := validation.Pod(pods[0]); err != nil {
		t.Errorf("valid pod refused: %v", err)
	}
	pods, _, err = Parse(doc(`{name: work, mountPath: /logs, subPath: logs, subPathExpr: "$(POD_NAME)"}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	err = validation.Pod(pods[0])
	if err == nil || !strings.Contains(err.Error(), "spec.containers[0].volume_mounts[0].sub_path_expr") || !strings.Contains(err.Error(), "mutually exclusive") {
		t.Errorf("validation = %v, want sub_path_expr refused as exclusive with sub_path", err)
	}
}

// an image volume is converted with its pull policy (unset stays
// unset, the default by tag), and a mount of it keeps its subPath.
func TestImageVolumeIsConvertedWithItsPullPolicyAndSubPath(t *testing.T) {
	pods, warns, err := Parse([]byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes:
  - {name: tools, image: {reference: "localhost/syncpod/busybox:1.36", pullPolicy: IfNotPresent}}
  - {name: data, image: {reference: "registry.local/data"}}
  containers:
  - name: c
    image: i
    volumeMounts:
    - {name: tools, mountPath: /mnt/tools}
    - {name: data, mountPath: /mnt/bin, subPath: bin}
`))
	if err != nil || len(warns) != 0 {
		t.Fatalf("Parse: %v, warnings %v", err, warns)
	}
	vols := pods[0].GetSpec().GetVolumes()
	want := []*syncpodv1.ImageVolumeSource{
		{Reference: "localhost/syncpod/busybox:1.36", PullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT},
		{Reference: "registry.local/data"},
	}
	for i, w := range want {
		if !proto.Equal(vols[i].GetImage(), w) {
			t.Errorf("volume %d = %v, want image %v", i, vols[i], w)
		}
	}
	if vm := pods[0].GetSpec().GetContainers()[0].GetVolumeMounts()[1]; vm.GetSubPath() != "bin" {
		t.Errorf("mount %v, want subPath bin", vm)
	}
	if err := validation.Pod(pods[0]); err != nil {
		t.Errorf("valid pod refused: %v", err)
	}
	if got := validation.ImageVolumePullPolicy(vols[1].GetImage()); got != syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS {
		t.Errorf("default pull policy of an untagged reference = %v, want ALWAYS", got)
	}

	_, _, err = Parse([]byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes: [{name: tools, image: {reference: r, pullPolicy: Sometimes}}]
  containers: [{name: c, image: i}]
`))
	if err == nil || !strings.Contains(err.Error(), "spec.volumes[0].image.pullPolicy: must be Always, IfNotPresent or Never") {
		t.Errorf("Parse = %v, want the pull policy refused with its path", err)
	}
}
