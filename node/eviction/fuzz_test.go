package eviction

import (
	"testing"
)

// FuzzParseThresholds: any --eviction-hard is parsed or refused; what is
// accepted is a positive quantity or a percentage in (0, 1).
func FuzzParseThresholds(f *testing.F) {
	for _, s := range []string{"", "memory.available<100Mi", "nodefs.available<10%,pid.available<1000",
		"imagefs.available<0%", "x<1", "memory.available<", "<<", "nodefs.inodesFree<5.5%", "memory.available<1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThresholds(s, Thresholds{})
		if err != nil {
			return
		}
		for _, x := range []Threshold{th.MemoryAvailable, th.NodeFsAvailable, th.NodeFsInodesFree, th.ImageFsAvailable, th.ImageFsInodesFree, th.PIDAvailable} {
			if x.Quantity < 0 || x.Percentage < 0 || x.Percentage >= 1 || (x.Quantity > 0 && x.Percentage > 0) {
				t.Errorf("%q: threshold %+v accepted", s, x)
			}
		}
	})
}
