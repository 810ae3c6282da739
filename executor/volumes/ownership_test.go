package volumes

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func i64(v int64) *int64 { return &v }

// owners returns a path's user and group (not following a link).
func owners(t *testing.T, p string) (uid, gid uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: the test gives files to another user and group")
	}
}

func TestFsUserIsTheOneUserEveryContainerRunsAs(t *testing.T) {
	sc := func(u int64) *syncpodv1.SecurityContext { return &syncpodv1.SecurityContext{RunAsUser: &u} }
	for _, tc := range []struct {
		name    string
		podUser *int64
		init    []*syncpodv1.SecurityContext
		regular []*syncpodv1.SecurityContext
		want    *int64
	}{
		{name: "nobody names a user", regular: []*syncpodv1.SecurityContext{nil}},
		{name: "the pod's user", podUser: i64(1000), regular: []*syncpodv1.SecurityContext{nil, nil}, want: i64(1000)},
		{name: "containers agree", regular: []*syncpodv1.SecurityContext{sc(7), sc(7)}, want: i64(7)},
		{name: "a container overrides the pod's the same", podUser: i64(7), regular: []*syncpodv1.SecurityContext{nil, sc(7)}, want: i64(7)},
		{name: "two users", podUser: i64(7), regular: []*syncpodv1.SecurityContext{nil, sc(8)}},
		{name: "an init container without one", init: []*syncpodv1.SecurityContext{nil}, regular: []*syncpodv1.SecurityContext{sc(7)}},
		{name: "an init container with another", init: []*syncpodv1.SecurityContext{sc(0)}, regular: []*syncpodv1.SecurityContext{sc(7)}},
		{name: "root alike", regular: []*syncpodv1.SecurityContext{sc(0)}, want: i64(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.SecurityContext = &syncpodv1.PodSecurityContext{RunAsUser: tc.podUser}
			pod.Spec.Containers = nil
			for i, s := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, &syncpodv1.Container{Name: "i" + string(rune('0'+i)), SecurityContext: s})
			}
			for i, s := range tc.regular {
				pod.Spec.Containers = append(pod.Spec.Containers, &syncpodv1.Container{Name: "c" + string(rune('0'+i)), SecurityContext: s})
			}
			got := fsUser(pod)
			switch {
			case (got == nil) != (tc.want == nil):
				t.Fatalf("fsUser = %v, want %v", got, tc.want)
			case got != nil && *got != *tc.want:
				t.Fatalf("fsUser = %d, want %d", *got, *tc.want)
			}
		})
	}
}

// With an fsGroup, the kubelet-written volumes belong to the group and
// are group-readable, their directories setgid; an emptyDir is the
// group's, group-writable and setgid; a hostPath is left alone.
func TestFsGroupOwnsTheVolumesTheNodeWrites(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	host := t.TempDir()
	pod := testPod(cmVolume("config", "cfg"),
		&syncpodv1.Volume{Name: "scratch", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}},
		&syncpodv1.Volume{Name: "creds", Source: &syncpodv1.Volume_Secret{Secret: &syncpodv1.SecretVolumeSource{
			SecretName: "creds", DefaultMode: i32(0o400), Items: []*syncpodv1.KeyToPath{{Key: "user", Path: "deep/er/user"}}}}},
		&syncpodv1.Volume{Name: "host", Source: &syncpodv1.Volume_HostPath{HostPath: &syncpodv1.HostPathVolumeSource{Path: host}}})
	pod.Spec.SecurityContext = &syncpodv1.PodSecurityContext{FsGroup: i64(2345)}
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	check := func(p string, wantMode os.FileMode, setgid bool) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != wantMode || (fi.Mode()&os.ModeSetgid != 0) != setgid {
			t.Errorf("%s mode = %v, want %o setgid=%v", p, fi.Mode(), wantMode, setgid)
		}
		if _, gid := owners(t, p); gid != 2345 {
			t.Errorf("%s group = %d, want 2345", p, gid)
		}
	}
	cfg := paths["config"]
	check(cfg, 0o755, true)
	check(filepath.Join(cfg, "mode"), 0o644, false) // 0644 already has group read
	check(filepath.Join(cfg, "app.conf"), 0o644, false)
	if _, gid := owners(t, filepath.Join(cfg, "mode")); gid != 2345 {
		t.Errorf("the visible link's group = %d, want 2345", gid)
	}
	creds := paths["creds"]
	check(filepath.Join(creds, "deep", "er", "user"), 0o440, false) // 0400 plus group read
	check(filepath.Join(creds, "deep", "er"), 0o755, true)
	check(paths["scratch"], 0o777, true)
	if _, gid := owners(t, host); gid == 2345 {
		t.Errorf("the hostPath %s was given to the fsGroup", host)
	}

	// A refresh with the same content writes nothing: the group bits are
	// part of what is compared.
	updated, errs := m.Update(pod, sources())
	if len(errs) != 0 || len(updated) != 0 {
		t.Errorf("Update with the same content = %v, %v; want nothing rewritten", updated, errs)
	}
}

// The token of a pod whose containers all run as one user, or with an
// fsGroup, is 0600 and that user's; the fsGroup adds group read; the
// volume's other files keep their modes.
func TestServiceAccountTokenBelongsToThePodsUser(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name      string
		sc        *syncpodv1.PodSecurityContext
		wantMode  os.FileMode
		wantOwner uint32
		wantGroup uint32
	}{
		{name: "neither: the default mode", wantMode: 0o644},
		{name: "one user", sc: &syncpodv1.PodSecurityContext{RunAsUser: i64(1001)}, wantMode: 0o600, wantOwner: 1001},
		{name: "an fsGroup", sc: &syncpodv1.PodSecurityContext{FsGroup: i64(3000)}, wantMode: 0o640, wantGroup: 3000},
		{name: "both", sc: &syncpodv1.PodSecurityContext{RunAsUser: i64(1001), FsGroup: i64(3000)}, wantMode: 0o640, wantOwner: 1001, wantGroup: 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t)
			pod := testPod(kubeAPIAccess())
			pod.Spec.SecurityContext = tc.sc
			paths, err := m.Setup(pod, tokenSources(pod, "eyJhbGciOi.first"))
			if err != nil {
				t.Fatal(err)
			}
			tok := filepath.Join(paths["kube-api-access-x7k2p"], "token")
			if got := mode(t, tok); got != tc.wantMode {
				t.Errorf("token mode = %o, want %o", got, tc.wantMode)
			}
			target, err := filepath.EvalSymlinks(tok)
			if err != nil {
				t.Fatal(err)
			}
			if uid, gid := owners(t, target); uid != tc.wantOwner || gid != tc.wantGroup {
				t.Errorf("token owned by %d:%d, want %d:%d", uid, gid, tc.wantOwner, tc.wantGroup)
			}
			if uid, _ := owners(t, tok); uid != tc.wantOwner {
				t.Errorf("the token's link owned by %d, want %d", uid, tc.wantOwner)
			}
			// The namespace file is not the user's: only tokens are.
			ns, _ := filepath.EvalSymlinks(filepath.Join(paths["kube-api-access-x7k2p"], "namespace"))
			if uid, _ := owners(t, ns); uid != 0 {
				t.Errorf("namespace owned by %d, want root", uid)
			}

			// A refreshed token keeps the owner and mode.
			if _, errs := m.Update(pod, tokenSources(pod, "eyJhbGciOi.second")); len(errs) != 0 {
				t.Fatal(errs)
			}
			if got := read(t, tok); got != "eyJhbGciOi.second" {
				t.Fatalf("token = %q after the refresh", got)
			}
			target, _ = filepath.EvalSymlinks(tok)
			if uid, gid := owners(t, target); uid != tc.wantOwner || gid != tc.wantGroup || mode(t, tok) != tc.wantMode {
				t.Errorf("refreshed token %d:%d %o, want %d:%d %o", uid, gid, mode(t, tok), tc.wantOwner, tc.wantGroup, tc.wantMode)
			}
		})
	}
}

// A node agent that may not change owners (not root) still sets the
// volumes up, with the group bits, and says so in its log: the kubelet's
// ownership change logs a failed chown and goes on.
func TestAFailedChangeOfOwnerIsLoggedNotAnError(t *testing.T) {
	saved := lchown
	t.Cleanup(func() { lchown = saved })
	lchown = func(string, int, int) error { return os.ErrPermission }
	var logs strings.Builder
	m := newManager(t)
	m.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	pod := testPod(cmVolume("config", "cfg"),
		&syncpodv1.Volume{Name: "scratch", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}})
	pod.Spec.SecurityContext = &syncpodv1.PodSecurityContext{FsGroup: i64(2345), RunAsUser: i64(1000)}
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatalf("Setup with every chown refused: %v", err)
	}
	if got := read(t, filepath.Join(paths["config"], "mode")); got != "prod" {
		t.Errorf("config/mode = %q", got)
	}
	if got := mode(t, paths["scratch"]); got != 0o777 {
		t.Errorf("scratch mode = %o, want 0777", got)
	}
	for _, vol := range []string{"config", "scratch"} {
		if !strings.Contains(logs.String(), "level=WARN msg=\"cannot give a volume's files to the pod's fsGroup or user; they keep their owner\" volume="+vol) {
			t.Errorf("no warning for %s in the log:\n%s", vol, logs.String())
		}
	}
}
