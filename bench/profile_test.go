package bench

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// cpuProfile is a CPU profile whose samples are the given stacks (leaf
// first) with their CPU nanoseconds.
func cpuProfile(t *testing.T, stacks map[string][]string, values map[string]int64) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		DurationNanos: 5_000_000_000,
	}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	for name, stack := range stacks {
		s := &profile.Sample{Value: []int64{values[name] / 10_000_000, values[name]}}
		for _, fn := range stack {
			loc := locs[fn]
			if loc == nil {
				f := &profile.Function{ID: uint64(len(funcs) + 1), Name: fn}
				funcs[fn] = f
				p.Function = append(p.Function, f)
				loc = &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: f}}}
				locs[fn] = loc
				p.Location = append(p.Location, loc)
			}
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSummarizeProfileCutsSamplesIntoCategories(t *testing.T) {
	data := cpuProfile(t, map[string][]string{
		"gc":     {"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"},
		"commit": {"internal/syscall/unix.Fdatasync", "go.etcd.io/bbolt.fdatasync", "go.etcd.io/bbolt.(*Tx).Commit", "main.sync"},
		"alloc":  {"runtime.mallocgc", "google.golang.org/protobuf/proto.Clone", "google.golang.org/grpc.invoke"},
		"own":    {"github.com/syncpod/syncpod/planner.compute"},
	}, map[string]int64{"gc": 200_000_000, "commit": 300_000_000, "alloc": 100_000_000, "own": 400_000_000})
	sum, err := SummarizeProfile(data)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Seconds != 5 || math.Abs(sum.CPUSeconds-1) > 1e-9 {
		t.Errorf("window %v s, CPU %v s; want 5 and 1", sum.Seconds, sum.CPUSeconds)
	}
	got := map[string]float64{}
	for _, s := range sum.Shares {
		got[s.Category] = s.Share
	}
	want := map[string]float64{
		ProfileCategories[0].Name: 0.2, // garbage collection
		ProfileCategories[1].Name: 0.1, // allocation
		ProfileCategories[2].Name: 0.3, // bbolt
		ProfileCategories[3].Name: 0.3, // fsync, inside bbolt's commit too
		ProfileCategories[4].Name: 0.1, // gRPC
		ProfileCategories[5].Name: 0.1, // protobuf
	}
	if len(got) != len(want) {
		t.Errorf("categories %v, want %v", got, want)
	}
	for c, w := range want {
		if math.Abs(got[c]-w) > 1e-9 {
			t.Errorf("%s: share %v, want %v", c, got[c], w)
		}
	}
	// The shares keep the categories' order.
	for i := 1; i < len(sum.Shares); i++ {
		if categoryIndex(sum.Shares[i].Category) < categoryIndex(sum.Shares[i-1].Category) {
			t.Errorf("shares out of order: %v", sum.Shares)
		}
	}
}

func categoryIndex(name string) int {
	for i, c := range ProfileCategories {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func TestSummarizeProfileRefusesWhatIsNotACPUProfile(t *testing.T) {
	if _, err := SummarizeProfile([]byte("not a profile")); err == nil {
		t.Error("garbage: no error")
	}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "inuse_space", Unit: "bytes"}}}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := SummarizeProfile(b.Bytes()); err == nil {
		t.Error("a heap profile: no error")
	}
}

func TestCaptureProfileTakesAProfileOfTheGivenLength(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	data, err := CaptureProfile(context.Background(), srv.URL+"/debug/pprof/profile", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := SummarizeProfile(data)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Seconds < 0.9 || sum.Seconds > 5 {
		t.Errorf("the profile covers %v s, want about 1", sum.Seconds)
	}
	if _, err := CaptureProfile(context.Background(), srv.URL+"/nothing", time.Second); err == nil {
		t.Error("a URL that is no profile: no error")
	}
}
