// Package hostsignals reads the host's eviction signals: its memory,
// the filesystems of the node and of the images, and its PIDs. The
// planner's eviction rounds read them here; the node agent measures
// nothing itself and asks the planner for the pressure conditions
// (GetNodeConditions).
package hostsignals

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syncpod/syncpod/planner/evictionplan"
)

// Signals are the host's eviction signals (evictionplan.Signals).
type Signals = evictionplan.Signals

// HostReader reads the host's eviction signals. ReadSignals is the
// host's; tests pass a fake.
type HostReader interface {
	Signals() (Signals, error)
}

// HostReaderFunc adapts a function to HostReader.
type HostReaderFunc func() (Signals, error)

// Signals calls f.
func (f HostReaderFunc) Signals() (Signals, error) { return f() }

// Sources are where ReadSignals reads the signals.
type Sources struct {
	// NodeFsDir and ImageFsDir are directories on the node's and the
	// images' filesystems (statfs of each).
	NodeFsDir, ImageFsDir string
	// MemoryCgroup, when set, is a cgroup directory (cgroup v2, or the
	// cgroup's directory in v1's memory hierarchy) whose working set,
	// against its memory limit or the host's MemTotal when that is lower,
	// gives memory.available, as the kubelet's reads the root cgroup's:
	// a node in a container, or in a slice of its own, sees its own
	// memory and not the host's. Empty: /proc/meminfo's MemAvailable.
	MemoryCgroup string
}

// CheckMemoryCgroup says whether dir is a cgroup directory whose memory
// ReadSignals can read, with a message a user can act on if it is not.
func CheckMemoryCgroup(dir string) error {
	if _, err := readCgroupMemory(dir); err != nil {
		return fmt.Errorf("%s is not a cgroup directory with memory accounting (cgroup v2's memory.current, or a directory of v1's memory hierarchy): %w", dir, err)
	}
	return nil
}

// cgroupMemory is a cgroup's memory use and limit.
type cgroupMemory struct {
	workingSet uint64
	// limit is 0 when the cgroup has none.
	limit uint64
}

// readCgroupMemory reads dir's usage less its inactive file cache (the
// working set, as the kubelet's cAdvisor counts it) and its limit: v2's
// memory.current, memory.stat's inactive_file and memory.max, or v1's
// memory.usage_in_bytes, memory.stat's total_inactive_file and
// memory.limit_in_bytes (whose "no limit" is a huge page-rounded number).
func readCgroupMemory(dir string) (cgroupMemory, error) {
	usageFile, limitFile, inactiveKey := "memory.current", "memory.max", "inactive_file"
	if _, err := os.Stat(filepath.Join(dir, usageFile)); err != nil {
		usageFile, limitFile, inactiveKey = "memory.usage_in_bytes", "memory.limit_in_bytes", "total_inactive_file"
	}
	usage, err := readCgroupValue(filepath.Join(dir, usageFile))
	if err != nil {
		return cgroupMemory{}, err
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return cgroupMemory{}, err
	}
	var inactive uint64
	for line := range strings.Lines(string(stat)) {
		if v, ok := strings.CutPrefix(line, inactiveKey+" "); ok {
			inactive, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	m := cgroupMemory{workingSet: usage - min(inactive, usage)}
	if limit, err := readCgroupValue(filepath.Join(dir, limitFile)); err == nil && limit < 1<<62 {
		m.limit = limit
	}
	return m, nil
}

// readCgroupValue reads a file holding one number; "max" (v2's no limit)
// reads as the largest value.
func readCgroupValue(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 1<<64 - 1, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// ReadSignals is the host's HostReader: MemAvailable and MemTotal from
// /proc/meminfo (the kubelet uses the root cgroup's working set; the
// kernel's estimate is close to it and needs no cgroup) or, with a
// MemoryCgroup, that cgroup's working set against its limit; statfs of
// the node's and the images' directories; the processes and threads of
// /proc/loadavg and kernel.pid_max.
func ReadSignals(src Sources) HostReader {
	return HostReaderFunc(func() (Signals, error) {
		var s Signals
		var errs []error
		if f, err := os.Open("/proc/meminfo"); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) < 2 {
					continue
				}
				kb, err := strconv.ParseInt(fields[1], 10, 64)
				if err != nil {
					continue
				}
				switch fields[0] {
				case "MemTotal:":
					s.MemoryCapacityBytes = kb * 1024
				case "MemAvailable:":
					s.MemoryAvailableBytes = kb * 1024
				}
			}
			_ = f.Close()
		} else {
			errs = append(errs, err)
		}
		if src.MemoryCgroup != "" {
			m, err := readCgroupMemory(src.MemoryCgroup)
			if err != nil {
				// Unmeasured: a threshold on it acts on no pod.
				s.MemoryCapacityBytes, s.MemoryAvailableBytes = 0, 0
				errs = append(errs, fmt.Errorf("memory cgroup %s: %w", src.MemoryCgroup, err))
			} else {
				if m.limit > 0 && (s.MemoryCapacityBytes == 0 || m.limit < uint64(s.MemoryCapacityBytes)) {
					s.MemoryCapacityBytes = int64(m.limit)
				}
				s.MemoryAvailableBytes = max(s.MemoryCapacityBytes-int64(min(m.workingSet, 1<<62)), 0)
			}
		}
		statfs := func(dir string) (avail, capacity, ifree, inodes int64, err error) {
			var fs unix.Statfs_t
			if err := unix.Statfs(dir, &fs); err != nil {
				return 0, 0, 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
			}
			return int64(fs.Bavail) * fs.Bsize, int64(fs.Blocks) * fs.Bsize, int64(fs.Ffree), int64(fs.Files), nil
		}
		var err error
		if s.NodeFsAvailableBytes, s.NodeFsCapacityBytes, s.NodeFsInodesFree, s.NodeFsInodes, err = statfs(src.NodeFsDir); err != nil {
			errs = append(errs, err)
		}
		if s.ImageFsAvailableBytes, s.ImageFsCapacityBytes, s.ImageFsInodesFree, s.ImageFsInodes, err = statfs(src.ImageFsDir); err != nil {
			errs = append(errs, err)
		}
		if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
			s.PIDMax, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		} else {
			errs = append(errs, err)
		}
		// /proc/loadavg: "0.50 0.40 0.30 2/345 6789": 345 tasks.
		if b, err := os.ReadFile("/proc/loadavg"); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 4 {
				if _, total, ok := strings.Cut(f[3], "/"); ok {
					s.Processes, _ = strconv.ParseInt(total, 10, 64)
				}
			}
		} else {
			errs = append(errs, err)
		}
		return s, errors.Join(errs...)
	})
}
