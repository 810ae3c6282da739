package evictionplan

import "testing"

// FuzzParse: any four eviction flags are parsed or refused; what is
// accepted has a known signal, a positive threshold (a quantity, or a
// percentage in (0, 1)), a minimum reclaim that is not negative, and a
// grace period on every soft threshold and no other.
func FuzzParse(f *testing.F) {
	for _, c := range []Config{
		{Hard: DefaultHard},
		{Hard: "memory.available<1Gi", Soft: "nodefs.available<20%", SoftGracePeriod: "nodefs.available=1m", MinimumReclaim: "memory.available=0Mi,nodefs.available=5%"},
		{Soft: "pid.available<100"}, {Hard: "x<1,,<<"}, {MinimumReclaim: "memory.available=-1"},
		{SoftGracePeriod: "imagefs.inodesFree=-1s"}, {Hard: "memory.available<1e400"},
	} {
		f.Add(c.Hard, c.Soft, c.SoftGracePeriod, c.MinimumReclaim)
	}
	f.Fuzz(func(t *testing.T, hard, soft, grace, minReclaim string) {
		ths, err := Parse(Config{Hard: hard, Soft: soft, SoftGracePeriod: grace, MinimumReclaim: minReclaim})
		if err != nil {
			return
		}
		nHard, _ := parseStatements("", hard)
		for i, th := range ths {
			ok := th.Signal.Resource() != "" &&
				((th.Value.Quantity > 0 && th.Value.Percentage == 0) || (th.Value.Quantity == 0 && th.Value.Percentage > 0 && th.Value.Percentage < 1)) &&
				th.MinReclaim.Quantity >= 0 && th.MinReclaim.Percentage >= 0 && th.MinReclaim.Percentage < 1 &&
				(i < len(nHard)) == th.Hard()
			if !ok {
				t.Errorf("%q %q %q %q: threshold %+v accepted", hard, soft, grace, minReclaim, th)
			}
		}
	})
}
