// Package nodestats reads the node's own resource use as the kubelet's
// cAdvisor takes it for its Summary API and resource metrics: the CPU
// time and memory of the root cgroup (cgroup v1 or v2, whichever the
// cgroup root holds), swap, and the filesystem of the node's root
// directory. Every path is a field, so tests read a fake tree.
package nodestats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Stats is one reading of the node's use. A pointer field is nil when
// the host does not say.
type Stats struct {
	// Time is when it was read.
	Time time.Time
	// CPUUsageCoreNanoseconds is the CPU time every process of the node
	// used since boot.
	CPUUsageCoreNanoseconds uint64
	// CPUUsageNanoCores is the rate since the Reader's previous reading,
	// in billionths of a core; nil on the first.
	CPUUsageNanoCores *uint64
	// MemoryUsageBytes is the memory in use, page cache included.
	MemoryUsageBytes uint64
	// MemoryWorkingSetBytes is the usage less the inactive file cache
	// (what the kubelet's memory.available subtracts from capacity).
	MemoryWorkingSetBytes uint64
	// MemoryRSSBytes is the anonymous memory.
	MemoryRSSBytes uint64
	// MemoryAvailableBytes is the machine's memory less the working set;
	// nil when the machine's memory is unknown.
	MemoryAvailableBytes *uint64
	// PageFaults and MajorPageFaults are the faults since boot.
	PageFaults, MajorPageFaults uint64
	// SwapUsageBytes is the swap in use; nil when the host does not
	// account for it.
	SwapUsageBytes *uint64
	// Fs is the filesystem of the node's root directory; nil without
	// one.
	Fs *Fs
}

// Fs is a filesystem's size and use, from statfs.
type Fs struct {
	CapacityBytes, AvailableBytes, UsedBytes uint64
	Inodes, InodesFree, InodesUsed           uint64
}

// Reader reads the node's use. The zero value reads the host's
// /sys/fs/cgroup and /proc/meminfo, and no filesystem. It is safe for
// concurrent use.
type Reader struct {
	// CgroupRoot is where the cgroup hierarchies are mounted (default
	// /sys/fs/cgroup): the unified one (cgroup v2) when it holds
	// cgroup.controllers, else a directory per v1 controller.
	CgroupRoot string
	// Meminfo is the kernel's memory summary (default /proc/meminfo), for
	// the machine's memory and, under cgroup v2, swap.
	Meminfo string
	// FsDir is a directory on the node's filesystem (the node agent's
	// root directory); "" reads none.
	FsDir string

	mu   sync.Mutex
	last cpuSample
}

type cpuSample struct {
	at    time.Time
	usage uint64
}

// ErrNoCgroup is returned when the cgroup root holds neither a cgroup v2
// hierarchy nor v1's cpuacct and memory controllers.
var ErrNoCgroup = errors.New("nodestats: no cgroup hierarchy with CPU and memory accounting")

// Read reads the node's use at now.
func (r *Reader) Read(now time.Time) (Stats, error) {
	root := r.CgroupRoot
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	meminfo := r.Meminfo
	if meminfo == "" {
		meminfo = "/proc/meminfo"
	}
	mi, miErr := readMeminfo(meminfo)
	var st Stats
	var err error
	if _, statErr := os.Stat(filepath.Join(root, "cgroup.controllers")); statErr == nil {
		st, err = readV2(root, mi)
	} else {
		st, err = readV1(root)
	}
	if err != nil {
		return Stats{}, err
	}
	st.Time = now
	if total, ok := mi["MemTotal"]; ok && miErr == nil {
		avail := uint64(0)
		if total > st.MemoryWorkingSetBytes {
			avail = total - st.MemoryWorkingSetBytes
		}
		st.MemoryAvailableBytes = &avail
	}
	if r.FsDir != "" {
		fs, err := statFs(r.FsDir)
		if err != nil {
			return Stats{}, err
		}
		st.Fs = &fs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if elapsed := now.Sub(r.last.at); !r.last.at.IsZero() && elapsed > 0 && st.CPUUsageCoreNanoseconds >= r.last.usage {
		rate := uint64(float64(st.CPUUsageCoreNanoseconds-r.last.usage) / elapsed.Seconds())
		st.CPUUsageNanoCores = &rate
	}
	if now.After(r.last.at) {
		r.last = cpuSample{at: now, usage: st.CPUUsageCoreNanoseconds}
	}
	return st, nil
}

// readV2 reads the unified hierarchy's root: cpu.stat's usage_usec and
// memory.stat; memory.current when the root has one (a cgroup
// namespace's root), else anon + file as the runtime's cgroup library
// counts the real root's usage. Swap comes from meminfo at the real
// root, memory.swap.current elsewhere.
func readV2(root string, mi map[string]uint64) (Stats, error) {
	cpu, err := readKeyed(filepath.Join(root, "cpu.stat"))
	if err != nil {
		return Stats{}, err
	}
	usec, ok := cpu["usage_usec"]
	if !ok {
		return Stats{}, fmt.Errorf("nodestats: %s has no usage_usec", filepath.Join(root, "cpu.stat"))
	}
	mem, err := readKeyed(filepath.Join(root, "memory.stat"))
	if err != nil {
		return Stats{}, err
	}
	st := Stats{CPUUsageCoreNanoseconds: usec * 1000, MemoryRSSBytes: mem["anon"],
		PageFaults: mem["pgfault"], MajorPageFaults: mem["pgmajfault"]}
	if cur, err := readUint(filepath.Join(root, "memory.current")); err == nil {
		st.MemoryUsageBytes = cur
		if swap, err := readUint(filepath.Join(root, "memory.swap.current")); err == nil {
			st.SwapUsageBytes = &swap
		}
	} else if errors.Is(err, os.ErrNotExist) {
		st.MemoryUsageBytes = mem["anon"] + mem["file"]
		total, hasTotal := mi["SwapTotal"]
		if free, hasFree := mi["SwapFree"]; hasTotal && hasFree && total >= free {
			swap := total - free
			st.SwapUsageBytes = &swap
		}
	} else {
		return Stats{}, err
	}
	st.MemoryWorkingSetBytes = workingSet(st.MemoryUsageBytes, mem["inactive_file"])
	return st, nil
}

// readV1 reads the root of the cpuacct and memory hierarchies:
// cpuacct.usage, memory.usage_in_bytes and memory.stat's hierarchical
// (total_) counters; swap from memory.memsw.usage_in_bytes when swap is
// accounted.
func readV1(root string) (Stats, error) {
	cpuDir, memDir := v1Controller(root, "cpuacct"), v1Controller(root, "memory")
	if cpuDir == "" || memDir == "" {
		return Stats{}, fmt.Errorf("%w under %s", ErrNoCgroup, root)
	}
	usage, err := readUint(filepath.Join(cpuDir, "cpuacct.usage"))
	if err != nil {
		return Stats{}, err
	}
	memUsage, err := readUint(filepath.Join(memDir, "memory.usage_in_bytes"))
	if err != nil {
		return Stats{}, err
	}
	mem, err := readKeyed(filepath.Join(memDir, "memory.stat"))
	if err != nil {
		return Stats{}, err
	}
	st := Stats{CPUUsageCoreNanoseconds: usage, MemoryUsageBytes: memUsage,
		MemoryWorkingSetBytes: workingSet(memUsage, mem["total_inactive_file"]),
		MemoryRSSBytes:        mem["total_rss"], PageFaults: mem["total_pgfault"], MajorPageFaults: mem["total_pgmajfault"]}
	if memsw, err := readUint(filepath.Join(memDir, "memory.memsw.usage_in_bytes")); err == nil && memsw >= memUsage {
		swap := memsw - memUsage
		st.SwapUsageBytes = &swap
	}
	return st, nil
}

// v1Controller is the directory of a v1 controller's hierarchy under
// root: the one whose name lists it ("cpuacct", "cpu,cpuacct"), or "".
func v1Controller(root, controller string) string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			for _, c := range strings.Split(e.Name(), ",") {
				if c == controller {
					return filepath.Join(root, e.Name())
				}
			}
		}
	}
	return ""
}

// workingSet is usage less the inactive file cache, never below zero.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("nodestats: %s: %w", path, err)
	}
	return v, nil
}

// readKeyed reads a file of "key value" lines (cpu.stat, memory.stat).
func readKeyed(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("nodestats: %s: %s: %w", path, k, err)
		}
		out[k] = n
	}
	return out, sc.Err()
}

// readMeminfo reads /proc/meminfo's values, in bytes.
func readMeminfo(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		unit := uint64(1)
		if s, ok := strings.CutSuffix(v, " kB"); ok {
			v, unit = s, 1024
		}
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			out[k] = n * unit
		}
	}
	return out, nil
}

// statFs is the size and use of the filesystem holding dir.
func statFs(dir string) (Fs, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return Fs{}, fmt.Errorf("nodestats: statfs %s: %w", dir, err)
	}
	bsize := uint64(s.Bsize)
	fs := Fs{CapacityBytes: s.Blocks * bsize, AvailableBytes: s.Bavail * bsize,
		Inodes: s.Files, InodesFree: s.Ffree}
	if s.Blocks >= s.Bfree {
		fs.UsedBytes = (s.Blocks - s.Bfree) * bsize
	}
	if s.Files >= s.Ffree {
		fs.InodesUsed = s.Files - s.Ffree
	}
	return fs, nil
}
