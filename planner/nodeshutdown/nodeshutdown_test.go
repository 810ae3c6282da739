package nodeshutdown

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func pod(name string, prio *int32, grace *int64) *syncpodv1.Pod {
	return &syncpodv1.Pod{Name: name, Uid: name, Spec: &syncpodv1.PodSpec{Priority: prio, TerminationGracePeriodSeconds: grace}}
}

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }

// the two-period form becomes regular and critical periods; the
// by-priority form is sorted; nothing configured is off.
func TestPeriods(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []Period
	}{
		{name: "off", cfg: Config{}},
		{name: "critical longer than the whole is off", cfg: Config{GracePeriod: 10 * time.Second, CriticalGracePeriod: 20 * time.Second}},
		{name: "whole only: regular pods get all of it, critical none",
			cfg:  Config{GracePeriod: 30 * time.Second},
			want: []Period{{0, 30}, {SystemCriticalPriority, 0}}},
		{name: "whole and critical",
			cfg:  Config{GracePeriod: 30 * time.Second, CriticalGracePeriod: 10 * time.Second},
			want: []Period{{0, 20}, {SystemCriticalPriority, 10}}},
		{name: "sub-second remainders are dropped",
			cfg:  Config{GracePeriod: 30*time.Second + 500*time.Millisecond, CriticalGracePeriod: 10 * time.Second},
			want: []Period{{0, 20}, {SystemCriticalPriority, 10}}},
		{name: "by priority, sorted lowest first",
			cfg:  Config{ByPriority: []Period{{100000, 10}, {SystemCriticalPriority, 5}, {0, 20}}},
			want: []Period{{0, 20}, {100000, 10}, {SystemCriticalPriority, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cfg.Periods()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Periods() = %v, want %v", got, tc.want)
			}
			if tc.cfg.Enabled() != (len(tc.want) > 0) {
				t.Fatalf("Enabled() = %v", tc.cfg.Enabled())
			}
		})
	}
	if got := Total([]Period{{0, 20}, {100, 10}}); got != 30*time.Second {
		t.Fatalf("Total = %v, want 30s", got)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // substrings, one per problem; none: valid
	}{
		{name: "empty", cfg: Config{}},
		{name: "two-period form", cfg: Config{GracePeriod: 30 * time.Second, CriticalGracePeriod: 10 * time.Second}},
		{name: "by priority", cfg: Config{ByPriority: []Period{{0, 10}, {1000, 5}}}},
		{name: "everything wrong at once",
			cfg: Config{GracePeriod: 500 * time.Millisecond, CriticalGracePeriod: -time.Second,
				ByPriority: []Period{{0, -1}, {0, 5}}},
			want: []string{"shutdown grace period 500ms must be either zero", "critical pods' shutdown grace period -1s must be",
				"not both", "grace period -1s must not be negative", "priority 0 is given a grace period twice"}},
		{name: "critical longer than the whole",
			cfg:  Config{GracePeriod: 10 * time.Second, CriticalGracePeriod: 20 * time.Second},
			want: []string{"must be <= the shutdown grace period 10s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// groupNames renders groups as "prio:grace[pod/grace pod/grace]".
func groupNames(groups []Group) []string {
	var out []string
	for _, g := range groups {
		var ms []string
		for _, m := range g.Members {
			ms = append(ms, m.Pod.GetName()+"/"+itoa(m.GracePeriodSeconds))
		}
		out = append(out, itoa(int64(g.Priority))+":"+itoa(g.GracePeriodSeconds)+"["+strings.Join(ms, " ")+"]")
	}
	return out
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// each pod goes to the highest period not above its priority
// (below every period: the lowest; above: the highest), and is killed
// with its group's grace or its own when that is shorter.
func TestGroups(t *testing.T) {
	three := []Period{{0, 20}, {100000, 10}, {SystemCriticalPriority, 5}}
	for _, tc := range []struct {
		name    string
		periods []Period
		pods    []*syncpodv1.Pod
		want    []string
	}{
		{name: "no periods, no groups", pods: []*syncpodv1.Pod{pod("a", nil, nil)}},
		{name: "three priorities in three groups, empty groups kept",
			periods: three,
			pods: []*syncpodv1.Pod{pod("crit", i32(SystemCriticalPriority), nil), pod("plain", nil, nil),
				pod("high", i32(100000), nil), pod("plain2", i32(0), nil)},
			want: []string{"0:20[plain/20 plain2/20]", "100000:10[high/10]", "2000000000:5[crit/5]"}},
		{name: "between two periods: the lower one",
			periods: three,
			pods:    []*syncpodv1.Pod{pod("mid", i32(99999), nil), pod("above", i32(100001), nil)},
			want:    []string{"0:20[mid/20]", "100000:10[above/10]", "2000000000:5[]"}},
		{name: "below the lowest and above the highest",
			periods: []Period{{10, 7}, {1000, 3}},
			pods:    []*syncpodv1.Pod{pod("neg", i32(-5), nil), pod("zero", nil, nil), pod("top", i32(2000001000), nil)},
			want:    []string{"10:7[neg/7 zero/7]", "1000:3[top/3]"}},
		{name: "a shorter own grace wins, a longer one does not",
			periods: three,
			pods:    []*syncpodv1.Pod{pod("short", nil, i64(3)), pod("long", nil, i64(60)), pod("zero", nil, i64(0)), pod("equal", nil, i64(20))},
			want:    []string{"0:20[short/3 long/20 zero/0 equal/20]", "100000:10[]", "2000000000:5[]"}},
		{name: "the two-period form: critical pods last",
			periods: Config{GracePeriod: 30 * time.Second, CriticalGracePeriod: 10 * time.Second}.Periods(),
			pods:    []*syncpodv1.Pod{pod("node-critical", i32(2000001000), nil), pod("cluster-critical", i32(SystemCriticalPriority), nil), pod("high", i32(1000000), nil)},
			want:    []string{"0:20[high/20]", "2000000000:10[node-critical/10 cluster-critical/10]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := groupNames(Groups(tc.periods, tc.pods))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Groups() =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestParsePeriods(t *testing.T) {
	got, err := ParsePeriods(" 0=20s, 100000=10s,2000000000=5s ")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Period{{0, 20}, {100000, 10}, {SystemCriticalPriority, 5}}; !slices.Equal(got, want) {
		t.Fatalf("ParsePeriods = %v, want %v", got, want)
	}
	if got, err := ParsePeriods(""); err != nil || got != nil {
		t.Fatalf("ParsePeriods(\"\") = %v, %v", got, err)
	}
	_, err = ParsePeriods("x=1s,0=1.5s,5,3000000000=1s,1=-2s")
	for _, w := range []string{`"x=1s": the priority`, `"0=1.5s": the grace period`, `"5": want PRIORITY=DURATION`,
		`"3000000000=1s": the priority`, `"1=-2s": the grace period`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("ParsePeriods error %v, want it to contain %q", err, w)
		}
	}
}
