package hostsignals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadSignalsFromThisHost(t *testing.T) {
	s, err := ReadSignals(Sources{NodeFsDir: t.TempDir(), ImageFsDir: "/"}).Signals()
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryCapacityBytes <= 0 || s.MemoryAvailableBytes <= 0 || s.MemoryAvailableBytes > s.MemoryCapacityBytes ||
		s.NodeFsCapacityBytes <= 0 || s.NodeFsAvailableBytes > s.NodeFsCapacityBytes || s.ImageFsCapacityBytes <= 0 ||
		s.PIDMax <= 0 || s.Processes <= 0 || s.Processes > s.PIDMax {
		t.Errorf("signals of this host look wrong: %+v", s)
	}
	if _, err := ReadSignals(Sources{NodeFsDir: "/nonexistent/syncpod", ImageFsDir: "/"}).Signals(); err == nil || !strings.Contains(err.Error(), "/nonexistent/syncpod") {
		t.Errorf("an unreadable dir: %v, want an error naming it", err)
	}
}

// fakeCgroup writes a cgroup directory's memory files.
func fakeCgroup(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hostMemTotal is what the host's /proc/meminfo says, through the reader
// without a cgroup.
func hostMemTotal(t *testing.T) int64 {
	t.Helper()
	s, err := ReadSignals(Sources{NodeFsDir: "/", ImageFsDir: "/"}).Signals()
	if err != nil {
		t.Fatal(err)
	}
	return s.MemoryCapacityBytes
}

// memory.available from a cgroup, v1 and v2, with and without a
// limit.
func TestMemoryFromACgroup(t *testing.T) {
	const mib = 1 << 20
	total := hostMemTotal(t)
	tests := map[string]struct {
		files                   map[string]string
		wantCapacity, wantAvail int64
	}{
		// 300 MiB used, 100 MiB of it inactive file cache: 200 MiB working
		// set against a 1 GiB limit.
		"v2 with a limit": {map[string]string{
			"memory.current": "314572800\n", "memory.max": "1073741824\n",
			"memory.stat": "anon 104857600\nfile 209715200\nactive_file 104857600\ninactive_file 104857600\n",
		}, 1024 * mib, 824 * mib},
		"v2 without a limit": {map[string]string{
			"memory.current": "314572800\n", "memory.max": "max\n",
			"memory.stat": "inactive_file 104857600\n",
		}, total, total - 200*mib},
		// v1 reads the hierarchical total_inactive_file, not inactive_file.
		"v1 with a limit": {map[string]string{
			"memory.usage_in_bytes": "314572800\n", "memory.limit_in_bytes": "536870912\n",
			"memory.stat": "inactive_file 1\ntotal_inactive_file 104857600\n",
		}, 512 * mib, 312 * mib},
		"v1 without a limit": {map[string]string{
			"memory.usage_in_bytes": "314572800\n", "memory.limit_in_bytes": "9223372036854771712\n",
			"memory.stat": "total_inactive_file 104857600\n",
		}, total, total - 200*mib},
		// More cache than usage (the counters are read apart): no negative
		// working set.
		"cache above usage": {map[string]string{
			"memory.current": "100\n", "memory.max": "1073741824\n", "memory.stat": "inactive_file 200\n",
		}, 1024 * mib, 1024 * mib},
		// Used beyond the limit (a limit lowered under the usage): nothing
		// available, never negative.
		"over the limit": {map[string]string{
			"memory.current": "2147483648\n", "memory.max": "1073741824\n", "memory.stat": "inactive_file 0\n",
		}, 1024 * mib, 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := fakeCgroup(t, tt.files)
			if err := CheckMemoryCgroup(dir); err != nil {
				t.Fatal(err)
			}
			s, err := ReadSignals(Sources{NodeFsDir: "/", ImageFsDir: "/", MemoryCgroup: dir}).Signals()
			if err != nil {
				t.Fatal(err)
			}
			if s.MemoryCapacityBytes != tt.wantCapacity || s.MemoryAvailableBytes != tt.wantAvail {
				t.Errorf("capacity %d MiB, available %d MiB; want %d, %d", s.MemoryCapacityBytes/mib, s.MemoryAvailableBytes/mib, tt.wantCapacity/mib, tt.wantAvail/mib)
			}
		})
	}
}

// A memory cgroup that cannot be read leaves memory unmeasured (no
// threshold on it acts) and says why; the other signals are still read.
func TestAnUnreadableMemoryCgroup(t *testing.T) {
	dir := t.TempDir()
	err := CheckMemoryCgroup(dir)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "memory.current") {
		t.Errorf("CheckMemoryCgroup(empty dir) = %v, want an error naming it and what it looked for", err)
	}
	s, err := ReadSignals(Sources{NodeFsDir: "/", ImageFsDir: "/", MemoryCgroup: dir}).Signals()
	if err == nil || !strings.Contains(err.Error(), "memory cgroup "+dir) {
		t.Errorf("err %v, want one naming the memory cgroup", err)
	}
	if s.MemoryCapacityBytes != 0 || s.MemoryAvailableBytes != 0 || s.NodeFsCapacityBytes <= 0 {
		t.Errorf("signals %+v: want memory unmeasured and the filesystems read", s)
	}
}
