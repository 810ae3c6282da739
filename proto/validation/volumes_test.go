package validation_test

import (
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func errPaths(err error) []string {
	var out []string
	for _, fe := range fielderr.As(err) {
		out = append(out, fe.Path)
	}
	return out
}

func i32(v int32) *int32 { return &v }

func volPod(vols []*syncpodv1.Volume, c *syncpodv1.Container) *syncpodv1.Pod {
	c.Name, c.Image = "c", "i"
	return &syncpodv1.Pod{Name: "p", Spec: &syncpodv1.PodSpec{Volumes: vols, Containers: []*syncpodv1.Container{c}}}
}

func TestPodVolumesValid(t *testing.T) {
	pod := volPod([]*syncpodv1.Volume{
		{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{SizeLimit: "64Mi"}}},
		{Name: "cfg", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "web", DefaultMode: i32(0o644),
			Items: []*syncpodv1.KeyToPath{{Key: "a.conf", Path: "conf/a.conf", Mode: i32(0o400)}}}}},
		{Name: "info", Source: &syncpodv1.Volume_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIVolumeSource{Items: []*syncpodv1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "app", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}}}}},
	}, &syncpodv1.Container{
		VolumeMounts: []*syncpodv1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "cfg", MountPath: "/etc/a.conf", SubPath: "conf/a.conf"}},
		EnvFrom:      []*syncpodv1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "web"}}},
		Env: []*syncpodv1.EnvVar{{Name: "IP", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{
			FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}},
	})
	if err := validation.Pod(pod); err != nil {
		t.Fatalf("valid pod refused: %v", err)
	}
}

func TestPodVolumesEveryProblemWithItsPath(t *testing.T) {
	pod := volPod([]*syncpodv1.Volume{
		{Name: "Bad_Name", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{SizeLimit: "lots"}}},
		{Name: "dup"},
		{Name: "dup", Source: &syncpodv1.Volume_HostPath{HostPath: &syncpodv1.HostPathVolumeSource{Path: "relative/../x", Type: 99}}},
		{Name: "cm", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{DefaultMode: i32(0o1777),
			Items: []*syncpodv1.KeyToPath{{Key: "bad key", Path: "../escape"}}}}},
		{Name: "dw", Source: &syncpodv1.Volume_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIVolumeSource{Items: []*syncpodv1.DownwardAPIVolumeFile{
			{Path: "ip", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "status.podIP"}},
			{Path: "mem", ResourceFieldRef: &syncpodv1.ResourceFieldSelector{Resource: "limits.gpu", Divisor: "0"}},
			{Path: "none"}}}}},
		{Name: "pj", Source: &syncpodv1.Volume_Projected{Projected: &syncpodv1.ProjectedVolumeSource{Sources: []*syncpodv1.VolumeProjection{{}}}}},
	}, &syncpodv1.Container{
		VolumeMounts: []*syncpodv1.VolumeMount{
			{Name: "nope", MountPath: "relative"},
			{Name: "cm", MountPath: "/a:b", SubPath: "/abs"},
			{Name: "cm", MountPath: "/x"}, {Name: "cm", MountPath: "/x/"},
		},
		EnvFrom: []*syncpodv1.EnvFromSource{{Prefix: "BAD=1"}},
		Env: []*syncpodv1.EnvVar{
			{Name: "A", Value: "v", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}},
			{Name: "B", ValueFrom: &syncpodv1.EnvVarSource{}},
			{Name: "C", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{}}}},
		},
	})
	want := []string{
		"spec.volumes[0].name", "spec.volumes[0].empty_dir.size_limit",
		"spec.volumes[1]",
		"spec.volumes[2].name", "spec.volumes[2].host_path.path", "spec.volumes[2].host_path.type",
		"spec.volumes[3].config_map.name", "spec.volumes[3].config_map.items[0].key", "spec.volumes[3].config_map.items[0].path", "spec.volumes[3].config_map.default_mode",
		"spec.volumes[4].downward_api.items[0].field_ref.field_path",
		"spec.volumes[4].downward_api.items[1].resource_field_ref.container_name", "spec.volumes[4].downward_api.items[1].resource_field_ref.resource", "spec.volumes[4].downward_api.items[1].resource_field_ref.divisor",
		"spec.volumes[4].downward_api.items[2]",
		"spec.volumes[5].projected.sources[0]",
		"spec.containers[0].volume_mounts[0].name", "spec.containers[0].volume_mounts[0].mount_path",
		"spec.containers[0].volume_mounts[1].mount_path", "spec.containers[0].volume_mounts[1].sub_path",
		"spec.containers[0].volume_mounts[3].mount_path",
		"spec.containers[0].env_from[0]", "spec.containers[0].env_from[0].prefix",
		"spec.containers[0].env[0].value_from", "spec.containers[0].env[0].value_from.field_ref.field_path",
		"spec.containers[0].env[1].value_from",
		"spec.containers[0].env[2].value_from.secret_key_ref.name", "spec.containers[0].env[2].value_from.secret_key_ref.key",
	}
	got := errPaths(validation.Pod(pod))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("paths =\n%s\nwant\n%s\n(%v)", strings.Join(got, "\n"), strings.Join(want, "\n"), validation.Pod(pod))
	}
}

func TestConfigMapAndSecretValidation(t *testing.T) {
	if err := validation.ConfigMap(&syncpodv1.ConfigMap{Name: "web", Data: map[string]string{"a.conf": "x", "B_1-c": "y"}}); err != nil {
		t.Fatalf("valid configmap: %v", err)
	}
	big := strings.Repeat("x", validation.MaxConfigBytes)
	got := errPaths(validation.ConfigMap(&syncpodv1.ConfigMap{Name: "web", Data: map[string]string{"a": big}}))
	if strings.Join(got, ",") != "data" {
		t.Errorf("oversized: %v", got)
	}
	got = errPaths(validation.Secret(&syncpodv1.Secret{Name: "s", Namespace: "Bad", Data: map[string][]byte{"..x": nil, ".": nil}}))
	if strings.Join(got, ",") != `namespace,data["."],data["..x"]` {
		t.Errorf("secret: %v", got)
	}
	if validation.ConfigKeyProblem("ok.key") != "" || validation.ConfigKeyProblem("a/b") == "" {
		t.Error("ConfigKeyProblem")
	}
}

// TestSubPathExprIsCheckedAsTheAPIServerDoes: sub_path_expr is
// accepted alone, refused with sub_path (they are mutually exclusive) and,
// before expansion, when absolute or holding a '..' element; a '..' only
// inside a name is fine.
func TestSubPathExprIsCheckedAsTheAPIServerDoes(t *testing.T) {
	vols := []*syncpodv1.Volume{{Name: "work", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}}
	for _, tc := range []struct {
		name     string
		mount    *syncpodv1.VolumeMount
		wantPath string
		wantMsg  string
	}{
		{"R-18.1 alone", &syncpodv1.VolumeMount{SubPathExpr: "$(ANNOTATION)/$(POD_NAME)"}, "", ""},
		{"R-18.1 dots inside a name", &syncpodv1.VolumeMount{SubPathExpr: "a..b/$(X)"}, "", ""},
		{"R-18.1 with sub_path", &syncpodv1.VolumeMount{SubPath: "logs", SubPathExpr: "$(POD_NAME)"},
			"spec.containers[0].volume_mounts[0].sub_path_expr", "mutually exclusive"},
		{"R-18.1 absolute", &syncpodv1.VolumeMount{SubPathExpr: "/$(POD_NAME)"},
			"spec.containers[0].volume_mounts[0].sub_path_expr", "must be a relative path"},
		{"R-18.1 a '..' element", &syncpodv1.VolumeMount{SubPathExpr: "$(POD_NAME)/../x"},
			"spec.containers[0].volume_mounts[0].sub_path_expr", "must not contain '..'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.mount.Name, tc.mount.MountPath = "work", "/work"
			err := validation.Pod(volPod(vols, &syncpodv1.Container{VolumeMounts: []*syncpodv1.VolumeMount{tc.mount}}))
			if tc.wantPath == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			fes := fielderr.As(err)
			if len(fes) != 1 || fes[0].Path != tc.wantPath || !strings.Contains(fes[0].Message, tc.wantMsg) {
				t.Errorf("errors %v, want one at %s saying %q", err, tc.wantPath, tc.wantMsg)
			}
		})
	}
}

// an image volume needs a reference and a known pull policy; a
// mount of it may name a subPath.
func TestImageVolumeRules(t *testing.T) {
	img := func(ref string, p syncpodv1.ImagePullPolicy) *syncpodv1.Volume {
		return &syncpodv1.Volume{Name: "tools", Source: &syncpodv1.Volume_Image{Image: &syncpodv1.ImageVolumeSource{Reference: ref, PullPolicy: p}}}
	}
	mount := &syncpodv1.Container{VolumeMounts: []*syncpodv1.VolumeMount{{Name: "tools", MountPath: "/mnt", SubPath: "bin"}}}
	if err := validation.Pod(volPod([]*syncpodv1.Volume{img("busybox:1.36", syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER)}, mount)); err != nil {
		t.Errorf("valid image volume refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		vol  *syncpodv1.Volume
		want string
	}{
		{"reference required", img("", 0), "spec.volumes[0].image.reference"},
		{"reference without whitespace", img("busy box", 0), "spec.volumes[0].image.reference"},
		{"reference bounded", img(strings.Repeat("a", validation.MaxImageLen+1), 0), "spec.volumes[0].image.reference"},
		{"known pull policy", img("busybox", 9), "spec.volumes[0].image.pull_policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errPaths(validation.Pod(volPod([]*syncpodv1.Volume{tc.vol}, &syncpodv1.Container{})))
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("paths %v, want [%s]", got, tc.want)
			}
		})
	}
}

// the pull policy an image volume (or a container) that sets none
// gets, as the API server defaults it.
func TestDefaultPullPolicyByTag(t *testing.T) {
	always, ifNot := syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT
	for ref, want := range map[string]syncpodv1.ImagePullPolicy{
		"busybox":                                   always,
		"busybox:latest":                            always,
		"localhost:5000/busybox":                    always,
		"localhost:5000/busybox:1.36":               ifNot,
		"localhost/syncpod/busybox:1.36":            ifNot,
		"busybox@sha256:" + strings.Repeat("a", 64): ifNot,
	} {
		if got := validation.ImageVolumePullPolicy(&syncpodv1.ImageVolumeSource{Reference: ref}); got != want {
			t.Errorf("%s: %v, want %v", ref, got, want)
		}
	}
	never := &syncpodv1.ImageVolumeSource{Reference: "busybox", PullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
	if got := validation.ImageVolumePullPolicy(never); got != syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER {
		t.Errorf("a set policy was replaced: %v", got)
	}
}
