package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// EmptyDirUsage is the disk use of the pod's emptyDir volume name, as du
// counts it: the blocks allocated to every file and directory under it
// (512 bytes each), each inode once. A volume never set up uses 0 bytes;
// files that vanish during the walk are skipped.
func (m *Manager) EmptyDirUsage(uid, name string) (int64, error) {
	dir := m.volumeDir(uid, kindEmptyDir, name)
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			total += info.Size()
			return nil
		}
		k := inode{uint64(st.Dev), st.Ino}
		if seen[k] {
			return nil
		}
		seen[k] = true
		total += st.Blocks * 512
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	return total, err
}
