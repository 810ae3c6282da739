package eviction

import (
	"slices"
	"strings"
	"testing"
)

// roomy is a host far from every default threshold.
func roomy() Signals {
	return Signals{
		MemoryAvailableBytes: 4 << 30, MemoryCapacityBytes: 8 << 30,
		NodeFsAvailableBytes: 50 << 30, NodeFsCapacityBytes: 100 << 30,
		NodeFsInodesFree: 900_000, NodeFsInodes: 1_000_000,
		ImageFsAvailableBytes: 50 << 30, ImageFsCapacityBytes: 100 << 30,
		ImageFsInodesFree: 900_000, ImageFsInodes: 1_000_000,
		Processes: 500, PIDMax: 4_194_304,
	}
}

func TestPressureOfDefaultThresholds(t *testing.T) {
	for _, tc := range []struct {
		name           string
		change         func(*Signals)
		mem, disk, pid bool
		why            []string
	}{
		{"roomy host", func(*Signals) {}, false, false, false, nil},
		{"memory.available just at 100Mi is no pressure", func(s *Signals) { s.MemoryAvailableBytes = 100 << 20 }, false, false, false, nil},
		{"memory.available below 100Mi", func(s *Signals) { s.MemoryAvailableBytes = 100<<20 - 1 }, true, false, false, []string{"memory.available"}},
		{"nodefs.available below 10%", func(s *Signals) { s.NodeFsAvailableBytes = 9 << 30 }, false, true, false, []string{"nodefs.available"}},
		{"nodefs.inodesFree below 5%", func(s *Signals) { s.NodeFsInodesFree = 49_999 }, false, true, false, []string{"nodefs.inodesFree"}},
		{"imagefs.available below 15% (nodefs at 14% is fine)", func(s *Signals) { s.ImageFsAvailableBytes = 14 << 30; s.NodeFsAvailableBytes = 14 << 30 }, false, true, false, []string{"imagefs.available"}},
		{"imagefs.inodesFree below 5%", func(s *Signals) { s.ImageFsInodesFree = 10 }, false, true, false, []string{"imagefs.inodesFree"}},
		{"pid headroom below 5%", func(s *Signals) { s.PIDMax = 32768; s.Processes = 31200 }, false, false, true, []string{"pid.available"}},
		{"pid headroom at 5% is no pressure", func(s *Signals) { s.PIDMax = 1000; s.Processes = 950 }, false, false, false, nil},
		{"unmeasured signals are no pressure", func(s *Signals) { *s = Signals{} }, false, false, false, nil},
		{"everything at once", func(s *Signals) {
			s.MemoryAvailableBytes, s.NodeFsAvailableBytes, s.Processes, s.PIDMax = 1, 1, 99, 100
		}, true, true, true, []string{"memory.available", "nodefs.available", "pid.available"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := roomy()
			tc.change(&s)
			p := PressureOf(s, DefaultThresholds())
			if p.Memory != tc.mem || p.Disk != tc.disk || p.PID != tc.pid || !slices.Equal(p.Why, tc.why) {
				t.Errorf("PressureOf = %+v, want memory=%v disk=%v pid=%v why=%v", p, tc.mem, tc.disk, tc.pid, tc.why)
			}
		})
	}
}

func TestParseThresholds(t *testing.T) {
	th, err := ParseThresholds("memory.available<1Gi, nodefs.available<20%,pid.available<1000", DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultThresholds()
	want.MemoryAvailable = Threshold{Quantity: 1 << 30}
	want.NodeFsAvailable = Threshold{Percentage: 0.20}
	want.PIDAvailable = Threshold{Quantity: 1000}
	if th != want {
		t.Errorf("ParseThresholds = %+v, want %+v", th, want)
	}
	if th, err := ParseThresholds("", DefaultThresholds()); err != nil || th != DefaultThresholds() {
		t.Errorf("empty: %+v %v", th, err)
	}
	_, err = ParseThresholds("memory.available>1Gi,disk.free<10%,nodefs.available<150%,imagefs.available<-1,pid.available<1e400", DefaultThresholds())
	for _, part := range []string{"memory.available>1Gi", "unknown signal \"disk.free\"", "nodefs.available<150%", "imagefs.available<-1", "pid.available<1e400"} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("error %v does not name %q", err, part)
		}
	}
}
