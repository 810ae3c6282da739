package volumes

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func i32(v int32) *int32 { return &v }

func newManager(t *testing.T) *Manager {
	t.Helper()
	n := 0
	m, err := New(Options{Root: t.TempDir(), NoTmpfs: true, Now: func() time.Time {
		n++
		return time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func testPod(vols ...*syncpodv1.Volume) *syncpodv1.Pod {
	return &syncpodv1.Pod{Uid: "0b6c0f4e-9d1a-4c1e-8f00-000000000001", Name: "web", Namespace: "shop",
		Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": `say "hi"`},
		Spec: &syncpodv1.PodSpec{Volumes: vols, Containers: []*syncpodv1.Container{{Name: "c", Image: "i",
			Resources: &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Cpu: "250m", Memory: "64Mi"}}}}}}
}

func cmVolume(name, cm string) *syncpodv1.Volume {
	return &syncpodv1.Volume{Name: name, Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: cm}}}
}

func sources() Sources {
	return NewSources(
		[]*syncpodv1.ConfigMap{{Name: "cfg", Namespace: "shop", Data: map[string]string{"app.conf": "port=80\n", "mode": "prod"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2}}}},
		[]*syncpodv1.Secret{{Name: "creds", Namespace: "shop", Data: map[string][]byte{"password": []byte("s3cret"), "user": []byte("admin")}}})
}

func TestConfigMapVolumeProjectsEveryKeyThroughDataLink(t *testing.T) {
	m := newManager(t)
	pod := testPod(cmVolume("config", "cfg"))
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["config"]
	if !strings.HasPrefix(dir, m.PodDir(pod.GetUid())) {
		t.Fatalf("volume %s is not under the pod dir", dir)
	}
	if got := read(t, filepath.Join(dir, "app.conf")); got != "port=80\n" {
		t.Errorf("app.conf = %q", got)
	}
	if got := read(t, filepath.Join(dir, "blob")); got != "\x00\x01\x02" {
		t.Errorf("blob = %q", got)
	}
	if l, err := os.Readlink(filepath.Join(dir, "app.conf")); err != nil || l != "..data/app.conf" {
		t.Errorf("app.conf link = %q, %v", l, err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "..data")); err != nil || !strings.HasPrefix(l, "..2026_01_01_00_00_") {
		t.Errorf("..data = %q, %v", l, err)
	}
	if got := mode(t, filepath.Join(dir, "mode")); got != 0o644 {
		t.Errorf("default mode %o, want 644", got)
	}
}

func TestConfigMapItemsModesAndOptional(t *testing.T) {
	m := newManager(t)
	v := &syncpodv1.Volume{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{
		Name: "cfg", DefaultMode: i32(0o400),
		Items: []*syncpodv1.KeyToPath{{Key: "app.conf", Path: "etc/app.conf"}, {Key: "mode", Path: "mode.txt", Mode: i32(0o600)}}}}}
	paths, err := m.Setup(testPod(v), sources())
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["config"]
	if got := read(t, filepath.Join(dir, "etc", "app.conf")); got != "port=80\n" {
		t.Errorf("etc/app.conf = %q", got)
	}
	if got := mode(t, filepath.Join(dir, "etc", "app.conf")); got != 0o400 {
		t.Errorf("defaultMode: %o", got)
	}
	if got := mode(t, filepath.Join(dir, "mode.txt")); got != 0o600 {
		t.Errorf("item mode: %o", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "blob")); !os.IsNotExist(err) {
		t.Errorf("a key not in items was projected: %v", err)
	}

	// A missing non-optional ConfigMap is the kubelet's FailedMount error;
	// an optional one projects nothing; a missing key of an optional one
	// is skipped.
	missing := testPod(cmVolume("other", "nope"))
	_, err = m.Setup(missing, sources())
	var me *MountError
	if !errors.As(err, &me) || !errors.Is(err, ErrMount) || err.Error() != `MountVolume.SetUp failed for volume "other" : configmap "nope" not found` {
		t.Fatalf("missing configmap: %v", err)
	}
	opt := &syncpodv1.Volume{Name: "opt", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "nope", Optional: true}}}
	if _, err := m.Setup(testPod(opt), sources()); err != nil {
		t.Fatalf("optional missing configmap: %v", err)
	}
	badKey := &syncpodv1.Volume{Name: "k", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "cfg",
		Items: []*syncpodv1.KeyToPath{{Key: "absent", Path: "x"}}}}}
	if _, err := m.Setup(testPod(badKey), sources()); err == nil || !strings.Contains(err.Error(), "non-existent config key: absent") {
		t.Fatalf("missing key: %v", err)
	}
	badKey.GetConfigMap().Optional = true
	if _, err := m.Setup(testPod(badKey), sources()); err != nil {
		t.Fatalf("missing key of optional: %v", err)
	}
}

func TestUpdateSwapsDataAtomicallyAndOnlyOnChange(t *testing.T) {
	m := newManager(t)
	pod := testPod(cmVolume("config", "cfg"))
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["config"]
	before, _ := os.Readlink(filepath.Join(dir, "..data"))

	// Same content: nothing rewritten.
	if up, errs := m.Update(pod, sources()); len(up) != 0 || len(errs) != 0 {
		t.Fatalf("unchanged update = %v %v", up, errs)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "..data")); l != before {
		t.Fatalf("..data moved without a change: %s -> %s", before, l)
	}

	// New content, a key gone: ..data points to a new directory, the old
	// one is removed, the gone key's link too.
	changed := NewSources([]*syncpodv1.ConfigMap{{Name: "cfg", Namespace: "shop", Data: map[string]string{"app.conf": "port=8080\n"}}}, nil)
	up, errs := m.Update(pod, changed)
	if len(errs) != 0 || len(up) != 1 || up[0] != "config" {
		t.Fatalf("update = %v %v", up, errs)
	}
	after, _ := os.Readlink(filepath.Join(dir, "..data"))
	if after == before {
		t.Fatal("..data did not move")
	}
	if got := read(t, filepath.Join(dir, "app.conf")); got != "port=8080\n" {
		t.Errorf("app.conf after update = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "mode")); !os.IsNotExist(err) {
		t.Errorf("removed key still visible: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, before)); !os.IsNotExist(err) {
		t.Errorf("old data dir kept: %v", err)
	}

	// A ConfigMap now missing keeps the old files and reports it.
	if _, errs := m.Update(pod, Sources{}); len(errs) != 1 || !strings.Contains(errs[0].Error(), `configmap "cfg" not found`) {
		t.Fatalf("missing on update: %v", errs)
	}
	if got := read(t, filepath.Join(dir, "app.conf")); got != "port=8080\n" {
		t.Errorf("files changed on a failed update: %q", got)
	}
	// A volume never set up is left for Setup.
	other := testPod(cmVolume("config", "cfg"))
	other.Uid = "0b6c0f4e-9d1a-4c1e-8f00-000000000002"
	if up, errs := m.Update(other, sources()); len(up)+len(errs) != 0 {
		t.Fatalf("update of a pod never set up = %v %v", up, errs)
	}
	if _, err := os.Stat(m.PodDir(other.GetUid())); !os.IsNotExist(err) {
		t.Fatalf("update created a pod dir: %v", err)
	}
}

func TestSecretProjectedAndDownwardAPIVolumes(t *testing.T) {
	m := newManager(t)
	pod := testPod(
		&syncpodv1.Volume{Name: "sec", Source: &syncpodv1.Volume_Secret{Secret: &syncpodv1.SecretVolumeSource{SecretName: "creds"}}},
		&syncpodv1.Volume{Name: "all", Source: &syncpodv1.Volume_Projected{Projected: &syncpodv1.ProjectedVolumeSource{Sources: []*syncpodv1.VolumeProjection{
			{Source: &syncpodv1.VolumeProjection_ConfigMap{ConfigMap: &syncpodv1.ConfigMapProjection{Name: "cfg", Items: []*syncpodv1.KeyToPath{{Key: "mode", Path: "cfg/mode"}}}}},
			{Source: &syncpodv1.VolumeProjection_Secret{Secret: &syncpodv1.SecretProjection{Name: "creds", Items: []*syncpodv1.KeyToPath{{Key: "user", Path: "cred/user"}}}}},
			{Source: &syncpodv1.VolumeProjection_Secret{Secret: &syncpodv1.SecretProjection{Name: "absent", Optional: true}}},
			{Source: &syncpodv1.VolumeProjection_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIProjection{Items: []*syncpodv1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		}}}},
		&syncpodv1.Volume{Name: "info", Source: &syncpodv1.Volume_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIVolumeSource{Items: []*syncpodv1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
			{Path: "app", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}},
			{Path: "ns", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
			{Path: "mem", ResourceFieldRef: &syncpodv1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: "1Mi"}},
		}}}},
	)
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(paths["sec"], "password"), "s3cret"},
		{filepath.Join(paths["all"], "cfg", "mode"), "prod"},
		{filepath.Join(paths["all"], "cred", "user"), "admin"},
		{filepath.Join(paths["all"], "name"), "web"},
		{filepath.Join(paths["info"], "labels"), "app=\"web\"\ntier=\"front\""},
		{filepath.Join(paths["info"], "annotations"), `note="say \"hi\""`},
		{filepath.Join(paths["info"], "app"), "web"},
		{filepath.Join(paths["info"], "ns"), "shop"},
		{filepath.Join(paths["info"], "mem"), "64"},
	} {
		if got := read(t, tc.file); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.file, got, tc.want)
		}
	}
	// A label change reaches the downward API file on Update.
	pod.Labels["app"] = "shop"
	up, errs := m.Update(pod, sources())
	if len(errs) != 0 || strings.Join(up, ",") != "info" {
		t.Fatalf("update after a label change = %v %v", up, errs)
	}
	if got := read(t, filepath.Join(paths["info"], "app")); got != "shop" {
		t.Errorf("app after update = %q", got)
	}
}

func TestEmptyDirKeptUntilRemove(t *testing.T) {
	m := newManager(t)
	pod := testPod(&syncpodv1.Volume{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}},
		&syncpodv1.Volume{Name: "mem", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{
			Medium: syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY, SizeLimit: "1Mi"}}})
	paths, err := m.Setup(pod, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if got := mode(t, paths["cache"]); got != 0o777 {
		t.Errorf("emptyDir mode %o, want 777", got)
	}
	if err := os.WriteFile(filepath.Join(paths["cache"], "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A container restart sets the volumes up again: the content stays.
	again, err := m.Setup(pod, Sources{})
	if err != nil || again["cache"] != paths["cache"] {
		t.Fatalf("second setup %v %v", again, err)
	}
	if got := read(t, filepath.Join(again["cache"], "f")); got != "kept" {
		t.Errorf("emptyDir content after a restart = %q", got)
	}
	if err := m.Remove(pod.GetUid()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.PodDir(pod.GetUid())); !os.IsNotExist(err) {
		t.Fatalf("pod dir after Remove: %v", err)
	}
	if err := m.Remove(pod.GetUid()); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if err := m.Remove("../x"); err == nil {
		t.Fatal("Remove accepted a uid with a slash")
	}
}

func TestEmptyDirMemoryIsATmpfsWithItsSizeLimit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: mounting a tmpfs needs root")
	}
	m, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(&syncpodv1.Volume{Name: "mem", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{
		Medium: syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY, SizeLimit: "1Mi"}}})
	t.Cleanup(func() { _ = m.Remove(pod.GetUid()) })
	paths, err := m.Setup(pod, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if !isMountPoint(paths["mem"]) {
		t.Skip("SKIPPING: this host refused the tmpfs mount (no CAP_SYS_ADMIN?); the fallback is a plain directory")
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	var line string
	for _, l := range strings.Split(string(mounts), "\n") {
		if strings.Contains(l, " "+paths["mem"]+" ") {
			line = l
		}
	}
	if !strings.Contains(line, "tmpfs") || !strings.Contains(line, "size=1024k") {
		t.Errorf("mountinfo for the memory emptyDir: %q", line)
	}
	if err := m.Remove(pod.GetUid()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mustRead(t, "/proc/self/mountinfo")), paths["mem"]) {
		t.Fatal("tmpfs still mounted after Remove")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHostPathTypesAsTheKubeletChecksThem(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hp := func(p string, typ syncpodv1.HostPathType) *syncpodv1.HostPathVolumeSource {
		return &syncpodv1.HostPathVolumeSource{Path: p, Type: typ}
	}
	T := syncpodv1.HostPathType_HOST_PATH_TYPE_UNSPECIFIED
	for _, tc := range []struct {
		name    string
		src     *syncpodv1.HostPathVolumeSource
		wantErr string
	}{
		{"unset type: no check", hp(filepath.Join(dir, "absent"), T), ""},
		{"DirectoryOrCreate creates", hp(filepath.Join(dir, "new", "d"), syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY_OR_CREATE), ""},
		{"DirectoryOrCreate on a file", hp(file, syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY_OR_CREATE), "is not a directory"},
		{"Directory exists", hp(dir, syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY), ""},
		{"Directory missing", hp(filepath.Join(dir, "absent"), syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY), "hostPath type check failed: " + filepath.Join(dir, "absent") + " is not a directory"},
		{"FileOrCreate creates", hp(filepath.Join(dir, "created"), syncpodv1.HostPathType_HOST_PATH_TYPE_FILE_OR_CREATE), ""},
		{"FileOrCreate needs the parent", hp(filepath.Join(dir, "no", "parent"), syncpodv1.HostPathType_HOST_PATH_TYPE_FILE_OR_CREATE), "no such file"},
		{"File exists", hp(file, syncpodv1.HostPathType_HOST_PATH_TYPE_FILE), ""},
		{"File is a directory", hp(dir, syncpodv1.HostPathType_HOST_PATH_TYPE_FILE), "is not a file"},
		{"Socket", hp(sock, syncpodv1.HostPathType_HOST_PATH_TYPE_SOCKET), ""},
		{"Socket is a file", hp(file, syncpodv1.HostPathType_HOST_PATH_TYPE_SOCKET), "is not a socket file"},
		{"CharDevice", hp("/dev/null", syncpodv1.HostPathType_HOST_PATH_TYPE_CHAR_DEVICE), ""},
		{"CharDevice is a file", hp(file, syncpodv1.HostPathType_HOST_PATH_TYPE_CHAR_DEVICE), "is not a character device"},
		{"BlockDevice is a char device", hp("/dev/null", syncpodv1.HostPathType_HOST_PATH_TYPE_BLOCK_DEVICE), "is not a block device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := hostPath(tc.src)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("hostPath: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("hostPath err = %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && p != tc.src.GetPath():
				t.Fatalf("path %q", p)
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(dir, "new", "d")); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate did not create: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "created")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("FileOrCreate did not create a 0644 file: %v %v", fi, err)
	}
}

func TestMountsReadOnlySubPathAndPropagation(t *testing.T) {
	m := newManager(t)
	host := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(host, "escape")); err != nil {
		t.Fatal(err)
	}
	pod := testPod(cmVolume("config", "cfg"),
		&syncpodv1.Volume{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}},
		&syncpodv1.Volume{Name: "host", Source: &syncpodv1.Volume_HostPath{HostPath: &syncpodv1.HostPathVolumeSource{Path: host}}})
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	c := &syncpodv1.Container{Name: "c", VolumeMounts: []*syncpodv1.VolumeMount{
		{Name: "config", MountPath: "/etc/app"},
		{Name: "config", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "cache", MountPath: "/cache", SubPath: "web", MountPropagation: syncpodv1.MountPropagation_MOUNT_PROPAGATION_HOST_TO_CONTAINER},
		{Name: "host", MountPath: "/host", ReadOnly: true, MountPropagation: syncpodv1.MountPropagation_MOUNT_PROPAGATION_BIDIRECTIONAL},
	}}
	ms, err := Mounts(pod, c, paths, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	realCfg, _ := filepath.EvalSymlinks(filepath.Join(paths["config"], "app.conf"))
	realCache, _ := filepath.EvalSymlinks(paths["cache"])
	want := []*runtimeapi.Mount{
		{ContainerPath: "/etc/app", HostPath: paths["config"], Readonly: true},
		{ContainerPath: "/etc/app.conf", HostPath: realCfg, Readonly: true},
		{ContainerPath: "/cache", HostPath: filepath.Join(realCache, "web"), Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/host", HostPath: host, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
	}
	if len(ms) != len(want) {
		t.Fatalf("mounts %v", ms)
	}
	for i := range want {
		if ms[i].String() != want[i].String() {
			t.Errorf("mount %d = %v, want %v", i, ms[i], want[i])
		}
	}
	if fi, err := os.Stat(filepath.Join(paths["cache"], "web")); err != nil || !fi.IsDir() {
		t.Errorf("subPath dir not created: %v", err)
	}
	// A subPath through a symlink out of the volume is refused; so is an
	// unknown volume.
	bad := &syncpodv1.Container{Name: "c", VolumeMounts: []*syncpodv1.VolumeMount{
		{Name: "host", MountPath: "/x", SubPath: "escape"},
		{Name: "nope", MountPath: "/y"},
	}}
	_, err = Mounts(pod, bad, paths, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "outside the volume") || !strings.Contains(err.Error(), `cannot find volume "nope"`) {
		t.Fatalf("bad mounts: %v", err)
	}
}

func TestSecretVolumeIsATmpfsWhenRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: mounting a tmpfs needs root")
	}
	m, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(&syncpodv1.Volume{Name: "sec", Source: &syncpodv1.Volume_Secret{Secret: &syncpodv1.SecretVolumeSource{SecretName: "creds"}}})
	t.Cleanup(func() { _ = m.Remove(pod.GetUid()) })
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	if !isMountPoint(paths["sec"]) {
		t.Skip("SKIPPING: this host refused the tmpfs mount; the fallback is a plain directory")
	}
	if got := read(t, filepath.Join(paths["sec"], "password")); got != "s3cret" {
		t.Errorf("password = %q", got)
	}
	// A second setup (a container restart) keeps the mount, not a second one on top.
	if _, err := m.Setup(pod, sources()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(mustRead(t, "/proc/self/mountinfo")), " "+paths["sec"]+" "); n != 1 {
		t.Fatalf("%d mounts on the secret volume, want 1", n)
	}
	if err := m.Remove(pod.GetUid()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mustRead(t, "/proc/self/mountinfo")), paths["sec"]) {
		t.Fatal("tmpfs still mounted after Remove")
	}
}
