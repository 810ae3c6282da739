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

// ReadSignals is the host's HostReader: MemAvailable and MemTotal from
// /proc/meminfo (the kubelet uses the root cgroup's working set; the
// kernel's estimate is close to it and needs no cgroup), statfs of
// nodeFsDir and imageFsDir, the processes and threads of /proc/loadavg
// and kernel.pid_max.
func ReadSignals(nodeFsDir, imageFsDir string) HostReader {
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
		statfs := func(dir string) (avail, capacity, ifree, inodes int64, err error) {
			var fs unix.Statfs_t
			if err := unix.Statfs(dir, &fs); err != nil {
				return 0, 0, 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
			}
			return int64(fs.Bavail) * fs.Bsize, int64(fs.Blocks) * fs.Bsize, int64(fs.Ffree), int64(fs.Files), nil
		}
		var err error
		if s.NodeFsAvailableBytes, s.NodeFsCapacityBytes, s.NodeFsInodesFree, s.NodeFsInodes, err = statfs(nodeFsDir); err != nil {
			errs = append(errs, err)
		}
		if s.ImageFsAvailableBytes, s.ImageFsCapacityBytes, s.ImageFsInodesFree, s.ImageFsInodes, err = statfs(imageFsDir); err != nil {
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
