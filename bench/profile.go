package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/google/pprof/profile"
)

// ProfileSummary is where a process's CPU time went over a window, from a
// Go CPU profile of it: the time sampled, and the share of it each
// category of work held.
type ProfileSummary struct {
	// Seconds is the window the profile covers; CPUSeconds the CPU time
	// its samples add up to.
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// Shares are the categories in ProfileCategories' order (those with
	// no sample left out).
	Shares []ProfileShare `json:"shares"`
}

// ProfileShare is one category's share of the sampled CPU time: the
// samples with a frame of the category anywhere in their stack (its
// cumulative time, as pprof's "cum"), so a sample may count in several.
type ProfileShare struct {
	Category string  `json:"category"`
	Share    float64 `json:"share"`
}

// ProfileCategory names a kind of work by the functions that do it.
type ProfileCategory struct {
	Name  string
	Funcs *regexp.Regexp
}

// ProfileCategories are the kinds of work a syncpod process's profile is
// cut into. Garbage collection counts the collector's own workers and the
// marking that allocating goroutines are made to assist with; allocation
// every call into the allocator (assists included).
var ProfileCategories = []ProfileCategory{
	{"garbage collection (background workers and assists)", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|gcAssistAlloc)$`)},
	{"memory allocation", regexp.MustCompile(`^runtime\.mallocgc$`)},
	{"bbolt transactions (commits, page writes, fsync)", regexp.MustCompile(`^go\.etcd\.io/bbolt\.`)},
	{"fsync and fdatasync", regexp.MustCompile(`^(syscall|internal/syscall/unix)\.(Fsync|Fdatasync)$`)},
	{"gRPC (transport, codec, interceptors)", regexp.MustCompile(`^google\.golang\.org/grpc[./]`)},
	{"protobuf encoding", regexp.MustCompile(`^google\.golang\.org/protobuf/`)},
	{"kube-apiserver client (client-go, HTTP/2, JSON)", regexp.MustCompile(`^(k8s\.io/client-go/|k8s\.io/apimachinery/|net/http\.|golang\.org/x/net/http2\.|encoding/json\.|sigs\.k8s\.io/json)`)},
	{"structured logging (log/slog)", regexp.MustCompile(`^log/slog\.`)},
	{"Prometheus metrics", regexp.MustCompile(`^github\.com/prometheus/`)},
	{"the simulated runtime (crisim)", regexp.MustCompile(`/crisim\.`)},
	{"system calls", regexp.MustCompile(`^(syscall\.|internal/runtime/syscall\.|runtime\.(futex|epollwait|netpoll)$)`)},
	{"goroutine scheduling and timers", regexp.MustCompile(`^runtime\.(schedule|findRunnable|park_m|goready|ready|runqsteal|stealWork|checkTimers|runtimer|wakep|startm|stopm|notesleep|mcall)$`)},
}

// SummarizeProfile reads a CPU profile (the gzipped protobuf of
// /debug/pprof/profile) and cuts its samples into ProfileCategories.
func SummarizeProfile(data []byte) (ProfileSummary, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return ProfileSummary{}, err
	}
	vi := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			vi = i
		}
	}
	if vi < 0 {
		return ProfileSummary{}, fmt.Errorf("not a CPU profile (no cpu/nanoseconds sample type)")
	}
	sum := ProfileSummary{Seconds: float64(p.DurationNanos) / 1e9}
	per := make([]int64, len(ProfileCategories))
	var total int64
	for _, s := range p.Sample {
		v := s.Value[vi]
		total += v
		hit := make([]bool, len(ProfileCategories))
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function == nil {
					continue
				}
				for c, cat := range ProfileCategories {
					if !hit[c] && cat.Funcs.MatchString(ln.Function.Name) {
						hit[c] = true
					}
				}
			}
		}
		for c, h := range hit {
			if h {
				per[c] += v
			}
		}
	}
	sum.CPUSeconds = float64(total) / 1e9
	if total == 0 {
		return sum, nil
	}
	for c, v := range per {
		if v > 0 {
			sum.Shares = append(sum.Shares, ProfileShare{Category: ProfileCategories[c].Name, Share: float64(v) / float64(total)})
		}
	}
	return sum, nil
}

// CaptureProfile asks a Go process's pprof endpoint (the URL of
// /debug/pprof/profile) for a CPU profile of the next d, and returns it.
func CaptureProfile(ctx context.Context, url string, d time.Duration) ([]byte, error) {
	secs := max(int(d.Seconds()), 1)
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"?seconds="+strconv.Itoa(secs), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}
