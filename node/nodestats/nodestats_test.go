package nodestats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncpod/syncpod/node/nodestats/nodestatstest"
)

const meminfo = "MemTotal:        1000 kB\nMemFree:          100 kB\nSwapTotal:        200 kB\nSwapFree:         150 kB\n"

func u64(v uint64) *uint64 { return &v }

// the root cgroup's CPU time, usage and working set on cgroup v1
// and v2.
func TestReadTakesTheRootCgroupAsCAdvisorDoes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Stats
	}{
		{
			name: "cgroup v1, cpu and cpuacct mounted together, swap accounted",
			files: map[string]string{
				"cpu,cpuacct/cpuacct.usage":          "5000000000\n",
				"memory/memory.usage_in_bytes":       "800000\n",
				"memory/memory.memsw.usage_in_bytes": "900000\n",
				"memory/memory.stat":                 "cache 1\ninactive_file 7\ntotal_rss 300000\ntotal_inactive_file 200000\ntotal_pgfault 11\ntotal_pgmajfault 2\n",
				"unified/cgroup.procs":               "",
				"systemd/notify_on_release":          "0\n",
				"meminfo":                            meminfo,
			},
			want: Stats{CPUUsageCoreNanoseconds: 5e9, MemoryUsageBytes: 800000, MemoryWorkingSetBytes: 600000, MemoryRSSBytes: 300000,
				MemoryAvailableBytes: u64(1000*1024 - 600000), PageFaults: 11, MajorPageFaults: 2, SwapUsageBytes: u64(100000)},
		},
		{
			name: "cgroup v1, separate cpuacct, no swap accounting, more inactive file than usage",
			files: map[string]string{
				"cpuacct/cpuacct.usage":        "42\n",
				"memory/memory.usage_in_bytes": "10\n",
				"memory/memory.stat":           "total_inactive_file 20\n",
				"meminfo":                      meminfo,
			},
			want: Stats{CPUUsageCoreNanoseconds: 42, MemoryUsageBytes: 10, MemoryAvailableBytes: u64(1000 * 1024)},
		},
		{
			name: "cgroup v2 root: usage is anon + file, swap from meminfo",
			files: map[string]string{
				"cgroup.controllers": "cpu memory\n",
				"cpu.stat":           "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\n",
				"memory.stat":        "anon 400000\nfile 500000\ninactive_file 100000\npgfault 9\npgmajfault 1\n",
				"meminfo":            meminfo,
			},
			want: Stats{CPUUsageCoreNanoseconds: 3e9, MemoryUsageBytes: 900000, MemoryWorkingSetBytes: 800000, MemoryRSSBytes: 400000,
				MemoryAvailableBytes: u64(1000*1024 - 800000), PageFaults: 9, MajorPageFaults: 1, SwapUsageBytes: u64(50 * 1024)},
		},
		{
			name: "cgroup v2 namespace root: memory.current and memory.swap.current",
			files: map[string]string{
				"cgroup.controllers":  "cpu memory\n",
				"cpu.stat":            "usage_usec 7\n",
				"memory.current":      "5000\n",
				"memory.swap.current": "12\n",
				"memory.stat":         "anon 1000\nfile 3000\ninactive_file 1500\n",
			},
			want: Stats{CPUUsageCoreNanoseconds: 7000, MemoryUsageBytes: 5000, MemoryWorkingSetBytes: 3500, MemoryRSSBytes: 1000, SwapUsageBytes: u64(12)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := nodestatstest.Tree(t, tc.files)
			r := &Reader{CgroupRoot: root, Meminfo: filepath.Join(root, "meminfo")}
			got, err := r.Read(at)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Time = at
			if show(got) != show(tc.want) {
				t.Errorf("Read:\n got %s\nwant %s", show(got), show(tc.want))
			}
		})
	}
}

// show prints st with its pointers followed.
func show(st Stats) string {
	p := func(v *uint64) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	return fmt.Sprintf("{time %s cpu %d rate %s usage %d ws %d rss %d avail %s faults %d/%d swap %s fs %v}",
		st.Time.Format(time.RFC3339Nano), st.CPUUsageCoreNanoseconds, p(st.CPUUsageNanoCores), st.MemoryUsageBytes,
		st.MemoryWorkingSetBytes, st.MemoryRSSBytes, p(st.MemoryAvailableBytes), st.PageFaults, st.MajorPageFaults, p(st.SwapUsageBytes), st.Fs)
}

func TestReadRateSincePreviousReading(t *testing.T) {
	root := nodestatstest.Tree(t, map[string]string{"cgroup.controllers": "", "cpu.stat": "usage_usec 1000000\n", "memory.stat": ""})
	r := &Reader{CgroupRoot: root, Meminfo: filepath.Join(root, "none")}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first, err := r.Read(at)
	if err != nil || first.CPUUsageNanoCores != nil {
		t.Fatalf("first reading: %s, %v; want no rate", show(first), err)
	}
	if err := os.WriteFile(filepath.Join(root, "cpu.stat"), []byte("usage_usec 3000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := r.Read(at.Add(4 * time.Second))
	if err != nil || second.CPUUsageNanoCores == nil || *second.CPUUsageNanoCores != 5e8 {
		t.Fatalf("second reading: %s, %v; want half a core (2 s of CPU in 4 s)", show(second), err)
	}
}

func TestReadFilesystemAndErrors(t *testing.T) {
	root := nodestatstest.Tree(t, map[string]string{"cgroup.controllers": "", "cpu.stat": "usage_usec 1\n", "memory.stat": ""})
	st, err := (&Reader{CgroupRoot: root, FsDir: root}).Read(time.Now())
	if err != nil || st.Fs == nil || st.Fs.CapacityBytes == 0 || st.Fs.UsedBytes > st.Fs.CapacityBytes || st.Fs.Inodes < st.Fs.InodesFree {
		t.Errorf("filesystem of %s: %+v, %v", root, st.Fs, err)
	}
	if _, err := (&Reader{CgroupRoot: t.TempDir()}).Read(time.Now()); !errors.Is(err, ErrNoCgroup) {
		t.Errorf("empty cgroup root: %v, want ErrNoCgroup", err)
	}
	bad := nodestatstest.Tree(t, map[string]string{"cgroup.controllers": "", "cpu.stat": "usage_usec many\n", "memory.stat": ""})
	if _, err := (&Reader{CgroupRoot: bad}).Read(time.Now()); err == nil {
		t.Error("cpu.stat with a bad number: no error")
	}
	if _, err := (&Reader{CgroupRoot: root, FsDir: filepath.Join(root, "nosuch")}).Read(time.Now()); err == nil {
		t.Error("a missing node directory: no error")
	}
}
