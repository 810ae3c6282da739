package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// file is one file of a projected directory.
type file struct {
	data []byte
	mode os.FileMode
	// owner is the file's user, nil for the writer's (root): the pod's one
	// user for its service account tokens.
	owner *int64
}

const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
)

// writeAtomic makes dir hold exactly files (relative paths) through a
// "..data" symlink to a fresh timestamped directory, swapped in with one
// rename. It reports whether anything changed; identical content (data
// and modes) writes nothing. With the pod's fsGroup (gid), everything
// written belongs to that group, files group-readable and directories
// group-searchable and setgid, before the swap makes them
// visible; a change of owner that fails is noted in own, not an error.
func writeAtomic(dir string, files map[string]file, now time.Time, gid *int64, own *chownLog) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if err := ownDir(dir, gid, own); err != nil {
		return false, err
	}
	for p := range files {
		if err := checkRelPath(p); err != nil {
			return false, err
		}
	}
	old, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if old != "" && sameContent(filepath.Join(dir, old), files, gid) {
		return false, nil
	}
	ts, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return false, err
	}
	if err := ownDir(ts, gid, own); err != nil {
		return false, err
	}
	for p, f := range files {
		full := filepath.Join(ts, p)
		if err := mkdirOwned(ts, filepath.Dir(p), gid, own); err != nil {
			return false, err
		}
		mode := groupMode(f.mode, gid, true, false)
		if err := os.WriteFile(full, f.data, mode); err != nil {
			return false, err
		}
		own.chown(full, f.owner, gid)
		if err := os.Chmod(full, mode); err != nil { // umask-proof
			return false, err
		}
	}
	tmp := filepath.Join(dir, dataLinkTmp)
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return false, err
	}
	own.chown(tmp, nil, gid)
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return false, err
	}
	// Visible names: one symlink per top-level component, through ..data.
	// A link to a file of its own user (a token) belongs to that user too.
	want := map[string]*int64{}
	for p, f := range files {
		top, _, nested := strings.Cut(p, "/")
		switch {
		case !nested:
			want[top] = f.owner
		case !inSet(want, top):
			want[top] = nil
		}
	}
	for top, owner := range want {
		link := filepath.Join(dir, top)
		target := filepath.Join(dataLink, top)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return false, err
		}
		own.chown(link, owner, gid)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		n := e.Name()
		switch {
		case n == dataLink || n == filepath.Base(ts):
		case strings.HasPrefix(n, ".."):
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				return true, err
			}
		case !inSet(want, n) && e.Type()&fs.ModeSymlink != 0:
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// checkRelPath refuses absolute paths, ".." components and names that
// start with "..", which the writer keeps for itself.
func checkRelPath(p string) error {
	if p == "" || filepath.IsAbs(p) {
		return fmt.Errorf("invalid path %q: must be relative and non-empty", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || strings.HasPrefix(part, "..") {
			return fmt.Errorf("invalid path %q: no empty, '.' or '..' components", p)
		}
	}
	return nil
}

// sameContent reports whether dir holds exactly files, with their modes
// (as the fsGroup gid makes them).
func sameContent(dir string, files map[string]file, gid *int64) bool {
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, ok := files[rel]
		if !ok {
			return errDiffers
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != groupMode(f.mode, gid, true, false).Perm() {
			return errDiffers
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, f.data) {
			return errDiffers
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}

var errDiffers = errors.New("differs")

// inSet reports whether m has key k.
func inSet[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// ownDir gives an existing directory of a kubelet-written volume to the
// fsGroup gid (a failure noted in own), group-searchable and setgid
//
func ownDir(dir string, gid *int64, own *chownLog) error {
	if gid == nil {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	own.chown(dir, nil, gid)
	return os.Chmod(dir, groupMode(info.Mode()&(os.ModePerm|os.ModeSetgid), gid, true, true))
}

// mkdirOwned creates the directories of rel below root (mode 0755), each
// given to the fsGroup gid as ownDir does.
func mkdirOwned(root, rel string, gid *int64, own *chownLog) error {
	if rel == "." {
		return nil
	}
	if err := mkdirOwned(root, filepath.Dir(rel), gid, own); err != nil {
		return err
	}
	full := filepath.Join(root, rel)
	if err := os.Mkdir(full, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	if err := os.Chmod(full, 0o755); err != nil { // umask-proof
		return err
	}
	return ownDir(full, gid, own)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
