package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Kind directory names under <root>/<uid>/volumes.
const (
	kindEmptyDir    = "empty-dir"
	kindConfigMap   = "config-map"
	kindSecret      = "secret"
	kindProjected   = "projected"
	kindDownwardAPI = "downward-api"
)

// DefaultMode is the file mode of projected files when the volume sets
// none (the Kubernetes default, 0644).
const DefaultMode os.FileMode = 0o644

// ErrMount classifies a volume that could not be set up: its message is
// the kubelet's FailedMount text.
var ErrMount = errors.New("volume setup failed")

// MountError is a volume that could not be set up.
type MountError struct {
	// Volume is the volume's name.
	Volume string
	// Err is why.
	Err error
}

func (e *MountError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

// Unwrap makes errors.Is(err, ErrMount) hold.
func (e *MountError) Unwrap() []error { return []error{ErrMount, e.Err} }

// Options configure a Manager.
type Options struct {
	// Root is the directory of pod directories. Required.
	Root string
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock for timestamped directory names; nil is time.Now.
	Now func() time.Time
	// NoTmpfs never mounts a tmpfs for medium: Memory (a plain directory
	// is used), e.g. for tests that must not mount.
	NoTmpfs bool
}

// Manager sets up and removes pods' volumes. Safe for concurrent use by
// different pods; calls for one pod must not overlap (the runner's pod
// lock ensures it).
type Manager struct {
	opts     Options
	warnOnce sync.Once
}

// New returns a Manager.
func New(opts Options) (*Manager, error) {
	if opts.Root == "" {
		return nil, errors.New("volumes: Root is required")
	}
	abs, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, err
	}
	opts.Root = abs
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{opts: opts}, nil
}

// PodDir is the pod's directory.
func (m *Manager) PodDir(uid string) string { return filepath.Join(m.opts.Root, uid) }

func (m *Manager) volumeDir(uid, kind, name string) string {
	return filepath.Join(m.opts.Root, uid, "volumes", kind, name)
}

// Paths maps a volume name to its directory (or file, for a hostPath) on
// the node.
type Paths map[string]string

// Setup makes every volume of pod ready and returns where each lives. All
// volumes are tried; the error joins a *MountError per volume that failed
// (the others are set up).
func (m *Manager) Setup(pod *syncpodv1.Pod, src Sources) (Paths, error) {
	if err := checkUID(pod.GetUid()); err != nil {
		return nil, err
	}
	paths := Paths{}
	var errs []error
	for _, v := range pod.GetSpec().GetVolumes() {
		if v.GetImage() != nil {
			continue // the runtime mounts it
		}
		p, err := m.setupOne(pod, v, src)
		if err != nil {
			errs = append(errs, &MountError{Volume: v.GetName(), Err: err})
			continue
		}
		paths[v.GetName()] = p
	}
	return paths, errors.Join(errs...)
}

// Update rewrites the pod's configMap, secret, projected and downwardAPI
// volumes that exist on disk when their content changed. It returns the
// names of the volumes rewritten (sorted) and one error per volume that
// could not be refreshed (its old files stay).
func (m *Manager) Update(pod *syncpodv1.Pod, src Sources) ([]string, []error) {
	if err := checkUID(pod.GetUid()); err != nil {
		return nil, []error{err}
	}
	var updated []string
	var errs []error
	for _, v := range pod.GetSpec().GetVolumes() {
		kind := projectedKind(v)
		if kind == "" {
			continue
		}
		dir := m.volumeDir(pod.GetUid(), kind, v.GetName())
		if _, err := os.Lstat(filepath.Join(dir, dataLink)); err != nil {
			continue // never set up: the next container start does it
		}
		files, err := projectFiles(pod, v, src)
		if err != nil {
			errs = append(errs, &MountError{Volume: v.GetName(), Err: err})
			continue
		}
		var own chownLog
		changed, err := writeAtomic(dir, files, m.opts.Now(), fsGroup(pod), &own)
		own.warn(m.opts.Logger, v.GetName())
		if err != nil {
			errs = append(errs, &MountError{Volume: v.GetName(), Err: err})
			continue
		}
		if changed {
			updated = append(updated, v.GetName())
		}
	}
	sort.Strings(updated)
	return updated, errs
}

// Remove deletes the pod's directory, unmounting the tmpfs of memory
// emptyDirs first. A missing directory is not an error.
func (m *Manager) Remove(uid string) error {
	if err := checkUID(uid); err != nil {
		return err
	}
	pod := m.PodDir(uid)
	if _, err := os.Lstat(pod); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// Our tmpfs mounts: memory emptyDirs, secret and projected volumes.
	for _, kind := range []string{kindEmptyDir, kindSecret, kindProjected} {
		dir := filepath.Join(pod, "volumes", kind)
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if isMountPoint(p) {
				if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
					return fmt.Errorf("unmount %s: %w", p, err)
				}
			}
		}
	}
	// Refuse to delete through any mount point left (one we did not make).
	var mounted []string
	_ = filepath.WalkDir(pod, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != pod && isMountPoint(p) {
			mounted = append(mounted, p)
			return filepath.SkipDir
		}
		return nil
	})
	if len(mounted) > 0 {
		return fmt.Errorf("pod directory %s still has mount points %v; not removed", pod, mounted)
	}
	return os.RemoveAll(pod)
}

// checkUID refuses a uid that is not one path element.
func checkUID(uid string) error {
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return fmt.Errorf("invalid pod uid %q", uid)
	}
	return nil
}

// isMountPoint reports whether p is on another device than its parent.
func isMountPoint(p string) bool {
	var a, b syscall.Stat_t
	if syscall.Lstat(p, &a) != nil || syscall.Lstat(filepath.Dir(p), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

func projectedKind(v *syncpodv1.Volume) string {
	switch {
	case v.GetConfigMap() != nil:
		return kindConfigMap
	case v.GetSecret() != nil:
		return kindSecret
	case v.GetProjected() != nil:
		return kindProjected
	case v.GetDownwardApi() != nil:
		return kindDownwardAPI
	}
	return ""
}

func (m *Manager) setupOne(pod *syncpodv1.Pod, v *syncpodv1.Volume, src Sources) (string, error) {
	uid := pod.GetUid()
	switch {
	case v.GetEmptyDir() != nil:
		return m.emptyDir(uid, v, fsGroup(pod))
	case v.GetHostPath() != nil:
		return hostPath(v.GetHostPath())
	}
	kind := projectedKind(v)
	if kind == "" {
		return "", errors.New("volume has no source")
	}
	files, err := projectFiles(pod, v, src)
	if err != nil {
		return "", err
	}
	dir := m.volumeDir(uid, kind, v.GetName())
	if kind == kindSecret || kind == kindProjected {
		// As the kubelet: a Secret's files, and a projected volume's
		// (Secrets, service account tokens), live in RAM, never on disk.
		if err := m.tmpfsOnce(dir, "mode=0755"); err != nil {
			return "", err
		}
	}
	var own chownLog
	_, err = writeAtomic(dir, files, m.opts.Now(), fsGroup(pod), &own)
	own.warn(m.opts.Logger, v.GetName())
	if err != nil {
		return "", err
	}
	return dir, nil
}

// tmpfsOnce creates dir and mounts a tmpfs on it with opts, unless dir
// exists already (set up before: kept as it is). A refused mount (no
// privilege) leaves a plain directory, logged once.
func (m *Manager) tmpfsOnce(dir, opts string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if m.opts.NoTmpfs {
		return nil
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		m.warnOnce.Do(func() {
			m.opts.Logger.Warn("cannot mount a tmpfs (emptyDir medium Memory, secret and projected volumes); using directories on disk", "err", err)
		})
	}
	return nil
}

func (m *Manager) emptyDir(uid string, v *syncpodv1.Volume, gid *int64) (string, error) {
	dir := m.volumeDir(uid, kindEmptyDir, v.GetName())
	ed := v.GetEmptyDir()
	if _, err := os.Stat(dir); err == nil {
		return dir, nil // kept across container restarts
	}
	if ed.GetMedium() == syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY {
		opts := "mode=0777"
		if s := ed.GetSizeLimit(); s != "" {
			q, err := resource.ParseQuantity(s)
			if err != nil {
				return "", fmt.Errorf("sizeLimit %q: %w", s, err)
			}
			opts += fmt.Sprintf(",size=%d", q.Value())
		}
		if err := m.tmpfsOnce(dir, opts); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // as the kubelet: world-writable
		return "", err
	}
	if gid != nil {
		// Once, when it is made: the pod's fsGroup owns it, setgid so
		// that what the containers create there is the group's too
		//
		var own chownLog
		own.chown(dir, nil, gid)
		own.warn(m.opts.Logger, v.GetName())
		if err := os.Chmod(dir, groupMode(0o777, gid, false, true)); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// hostPath checks (and for the *OrCreate types, creates) the node path as
// the kubelet's hostPath type checker does.
func hostPath(h *syncpodv1.HostPathVolumeSource) (string, error) {
	p := h.GetPath()
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("hostPath %q is not absolute", p)
	}
	info, statErr := os.Stat(p)
	exists := statErr == nil
	fail := func(what string) (string, error) {
		return "", fmt.Errorf("hostPath type check failed: %s is not a %s", p, what)
	}
	switch h.GetType() {
	case syncpodv1.HostPathType_HOST_PATH_TYPE_UNSPECIFIED:
		return p, nil
	case syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY_OR_CREATE:
		if !exists {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return "", err
			}
			return p, nil
		}
		if !info.IsDir() {
			return fail("directory")
		}
	case syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY:
		if !exists || !info.IsDir() {
			return fail("directory")
		}
	case syncpodv1.HostPathType_HOST_PATH_TYPE_FILE_OR_CREATE:
		if !exists {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return "", err
			}
			return p, f.Close()
		}
		if !info.Mode().IsRegular() {
			return fail("file")
		}
	case syncpodv1.HostPathType_HOST_PATH_TYPE_FILE:
		if !exists || !info.Mode().IsRegular() {
			return fail("file")
		}
	case syncpodv1.HostPathType_HOST_PATH_TYPE_SOCKET:
		if !exists || info.Mode()&fs.ModeSocket == 0 {
			return fail("socket file")
		}
	case syncpodv1.HostPathType_HOST_PATH_TYPE_CHAR_DEVICE:
		if !exists || info.Mode()&fs.ModeCharDevice == 0 {
			return fail("character device")
		}
	case syncpodv1.HostPathType_HOST_PATH_TYPE_BLOCK_DEVICE:
		if !exists || info.Mode()&fs.ModeDevice == 0 || info.Mode()&fs.ModeCharDevice != 0 {
			return fail("block device")
		}
	default:
		return "", fmt.Errorf("unknown hostPath type %v", h.GetType())
	}
	return p, nil
}

func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m) & 0o777
}

// projectFiles computes the files of a configMap, secret, projected or
// downwardAPI volume.
func projectFiles(pod *syncpodv1.Pod, v *syncpodv1.Volume, src Sources) (map[string]file, error) {
	ns := pod.GetNamespace()
	files := map[string]file{}
	switch {
	case v.GetConfigMap() != nil:
		c := v.GetConfigMap()
		data, err := src.configMapData(ns, c.GetName())
		if err != nil {
			if c.GetOptional() {
				return files, nil
			}
			return nil, err
		}
		return files, keysToFiles(files, data, c.GetItems(), modeOr(c.DefaultMode, DefaultMode), c.GetOptional(), "ConfigMap")
	case v.GetSecret() != nil:
		s := v.GetSecret()
		data, err := src.secretData(ns, s.GetSecretName())
		if err != nil {
			if s.GetOptional() {
				return files, nil
			}
			return nil, err
		}
		return files, keysToFiles(files, data, s.GetItems(), modeOr(s.DefaultMode, DefaultMode), s.GetOptional(), "Secret")
	case v.GetDownwardApi() != nil:
		d := v.GetDownwardApi()
		return files, downwardFiles(files, pod, d.GetItems(), modeOr(d.DefaultMode, DefaultMode))
	case v.GetProjected() != nil:
		pv := v.GetProjected()
		mode := modeOr(pv.DefaultMode, DefaultMode)
		for i, s := range pv.GetSources() {
			var err error
			switch {
			case s.GetServiceAccountToken() != nil:
				err = tokenFile(files, pod, v.GetName(), i, s.GetServiceAccountToken(), mode, src)
			case s.GetConfigMap() != nil:
				c := s.GetConfigMap()
				var data map[string][]byte
				if data, err = src.configMapData(ns, c.GetName()); err == nil {
					err = keysToFiles(files, data, c.GetItems(), mode, c.GetOptional(), "ConfigMap")
				} else if c.GetOptional() {
					err = nil
				}
			case s.GetSecret() != nil:
				c := s.GetSecret()
				var data map[string][]byte
				if data, err = src.secretData(ns, c.GetName()); err == nil {
					err = keysToFiles(files, data, c.GetItems(), mode, c.GetOptional(), "Secret")
				} else if c.GetOptional() {
					err = nil
				}
			case s.GetDownwardApi() != nil:
				err = downwardFiles(files, pod, s.GetDownwardApi().GetItems(), mode)
			}
			if err != nil {
				return nil, err
			}
		}
		return files, nil
	}
	return nil, errors.New("not a projected volume")
}

// tokenFile adds the service account token of source index of volume,
// from the pod's token Secret. The file has the volume's default
// mode, as the kubelet writes it, unless the pod has an fsGroup or all
// its containers run as one user: then it is 0600 and that user's
// and the fsGroup adds group read. A token not handed over yet fails the
// volume: the container waits, as at the kubelet, for the API server to
// issue it. The token itself is never part of an error.
func tokenFile(files map[string]file, pod *syncpodv1.Pod, volume string, index int, t *syncpodv1.ServiceAccountTokenProjection, mode os.FileMode, src Sources) error {
	name := validation.TokenSecretName(pod.GetUid())
	data, err := src.secretData(pod.GetNamespace(), name)
	if err != nil {
		return fmt.Errorf("service account token of source %d not issued yet (no Secret %s)", index, name)
	}
	tok, ok := data[validation.TokenSecretKey(volume, index)]
	if !ok || len(tok) == 0 {
		return fmt.Errorf("service account token of source %d not issued yet (no key %s in Secret %s)", index, validation.TokenSecretKey(volume, index), name)
	}
	owner := fsUser(pod)
	if owner != nil || fsGroup(pod) != nil {
		mode = 0o600
	}
	files[t.GetPath()] = file{data: tok, mode: mode, owner: owner}
	return nil
}

// keysToFiles adds data's keys (all, or the items) to files.
func keysToFiles(files map[string]file, data map[string][]byte, items []*syncpodv1.KeyToPath, mode os.FileMode, optional bool, kind string) error {
	if len(items) == 0 {
		for _, k := range sortedKeys(data) {
			files[k] = file{data: data[k], mode: mode}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.GetKey()]
		if !ok {
			if optional {
				continue
			}
			if kind == "Secret" {
				return fmt.Errorf("references non-existent secret key: %s", it.GetKey())
			}
			return fmt.Errorf("configmap references non-existent config key: %s", it.GetKey())
		}
		files[it.GetPath()] = file{data: v, mode: modeOr(it.Mode, mode)}
	}
	return nil
}

func downwardFiles(files map[string]file, pod *syncpodv1.Pod, items []*syncpodv1.DownwardAPIVolumeFile, mode os.FileMode) error {
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.GetFieldRef() != nil:
			val, err = volumeFieldValue(pod, it.GetFieldRef().GetFieldPath())
		case it.GetResourceFieldRef() != nil:
			rf := it.GetResourceFieldRef()
			val, err = resourceValue(pod, findContainer(pod, rf.GetContainerName()), rf)
		default:
			err = fmt.Errorf("item %q selects nothing", it.GetPath())
		}
		if err != nil {
			return err
		}
		files[it.GetPath()] = file{data: []byte(val), mode: modeOr(it.Mode, mode)}
	}
	return nil
}
