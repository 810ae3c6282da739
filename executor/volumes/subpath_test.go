package volumes

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestSubPathExprExpandsFromTheEnvironment: a
// subPathExpr is expanded against the container's variables with the
// $(VAR) syntax; an undefined or empty variable fails with the kubelet's
// message, and so does an expanded path that is absolute or holds "..".
func TestSubPathExprExpandsFromTheEnvironment(t *testing.T) {
	vars := map[string]string{"POD_NAME": "web-1", "ANNOTATION": "mypath", "EMPTY": "", "UP": "..", "ABS": "/tmp"}
	for _, tc := range []struct {
		name    string
		vm      *syncpodv1.VolumeMount
		want    string
		wantErr string
	}{
		{"R-18.1 no sub path", &syncpodv1.VolumeMount{}, "", ""},
		{"R-18.1 a plain subPath", &syncpodv1.VolumeMount{SubPath: "logs"}, "logs", ""},
		{"R-18.1 one variable", &syncpodv1.VolumeMount{SubPathExpr: "$(POD_NAME)"}, "web-1", ""},
		{"R-18.1 variables and text", &syncpodv1.VolumeMount{SubPathExpr: "$(ANNOTATION)/$(POD_NAME)/logs"}, "mypath/web-1/logs", ""},
		{"R-18.1 an escaped reference stays", &syncpodv1.VolumeMount{SubPathExpr: "$$(POD_NAME)"}, "$(POD_NAME)", ""},
		{"R-18.1 an empty variable is missing", &syncpodv1.VolumeMount{SubPathExpr: "$(EMPTY)/$(POD_NAME)"}, "", "missing value for EMPTY"},
		{"R-18.1 undefined variables, sorted once", &syncpodv1.VolumeMount{SubPathExpr: "$(ZED)/$(ALPHA)/$(ZED)"}, "", "missing value for ALPHA, ZED"},
		{"R-18.2 expanded to '..'", &syncpodv1.VolumeMount{SubPathExpr: "$(UP)"}, "", "unable to provision SubPath `..`: must not contain '..'"},
		{"R-18.2 expanded to an absolute path", &syncpodv1.VolumeMount{SubPathExpr: "$(ABS)"}, "", "error SubPath `/tmp` must not be an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SubPath(tc.vm, vars)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("SubPath = %q, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("SubPath = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestMountsExpandSubPathExprAndCreateItsDirectory: a
// subPathExpr mount of an emptyDir is the expanded directory inside the
// volume, made when missing with the volume's own mode (0777) whatever the
// umask, and the same volume mounted whole sees what is written there; a
// bad expansion is the kubelet's message, nothing else.
func TestMountsExpandSubPathExprAndCreateItsDirectory(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	m := newManager(t)
	pod := testPod(&syncpodv1.Volume{Name: "work", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}})
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	env := []*runtimeapi.KeyValue{{Key: "POD_NAME", Value: []byte("foo")}, {Key: "ANNOTATION", Value: []byte("mypath")}}
	c := &syncpodv1.Container{Name: "c", VolumeMounts: []*syncpodv1.VolumeMount{
		{Name: "work", MountPath: "/subpath_mount", SubPathExpr: "$(ANNOTATION)/$(POD_NAME)"},
		{Name: "work", MountPath: "/volume_mount"},
	}}
	ms, err := Mounts(pod, c, paths, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	realWork, _ := filepath.EvalSymlinks(paths["work"])
	dir := filepath.Join(realWork, "mypath", "foo")
	if len(ms) != 2 || ms[0].GetHostPath() != dir || ms[1].GetHostPath() != paths["work"] {
		t.Fatalf("mounts %v, want %s then the whole volume", ms, dir)
	}
	for _, d := range []string{filepath.Join(realWork, "mypath"), dir} {
		if got := mode(t, d); got != 0o777 {
			t.Errorf("%s mode %o, want the volume's 0777", d, got)
		}
	}
	if err := os.WriteFile(filepath.Join(ms[0].GetHostPath(), "test.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(paths["work"], "mypath", "foo", "test.log")); err != nil {
		t.Errorf("a file written in the subpath is not in the volume: %v", err)
	}
	env[1].Value = nil // the annotation is gone
	_, err = Mounts(pod, c, paths, nil, env)
	if err == nil || err.Error() != "missing value for ANNOTATION" {
		t.Errorf("Mounts = %v, want the kubelet's missing value error", err)
	}
}
