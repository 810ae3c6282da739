package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// NodeScaleOptions say how NodeScale loads one side's nodes.
type NodeScaleOptions struct {
	// Side names the nodes in the report; Version what they run.
	Side, Version string
	// Nodes are the side's nodes and their processes.
	Nodes []NodeProcs
	// NodesStarted is when the nodes' processes were started (for
	// ReadySeconds; zero: the call's start).
	NodesStarted time.Time
	// PodsPerNode pods are created bound to the nodes round-robin
	// (spec.nodeName: no scheduler), CreateRate a second, then deleted
	// at the same rate.
	PodsPerNode int
	CreateRate  float64
	// Settle is how long the nodes are left once Ready before the idle
	// window opens (their start-up requests are not idle ones).
	Settle time.Duration
	// Idle is how long the Ready nodes are measured without pods.
	Idle time.Duration
	// Image is the pods' one container's image.
	Image string
	// AuditLog is the API server's audit log (JSON lines), read after
	// the run for the nodes' requests.
	AuditLog string
	// Timeout bounds the nodes turning Ready, and each of the waits for
	// every pod Running and every pod gone.
	Timeout time.Duration
	// SampleEvery is the period of the CPU and memory samples under load.
	SampleEvery time.Duration
	// ProfileURL, when set, is the pprof CPU profile endpoint
	// (/debug/pprof/profile) of the side's process: it is profiled over
	// the load window's pacing (the creates, then the deletes), the
	// profile written to ProfileOut when that is set and summarized into
	// the report.
	ProfileURL, ProfileOut string
	Logger                 *slog.Logger
}

// ScalePodLabel is the label of every pod NodeScale creates.
const ScalePodLabel = "syncpod-bench-scale"

// ScalePod is a load pod: one container of image, no service-account
// token (no kube-controller-manager publishes the root CA it needs), no
// resource requests (the fake nodes' capacities differ), bound to node.
func ScalePod(name, node, image string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"app": ScalePodLabel}},
		"spec": map[string]any{
			"nodeName":                     node,
			"automountServiceAccountToken": false,
			"enableServiceLinks":           false,
			"containers": []any{map[string]any{
				"name": "main", "image": image, "imagePullPolicy": "IfNotPresent",
			}},
		},
	}
}

// podTimes are what the watch and the driver saw of one pod.
type podTimes struct {
	created, running, deleteSent, gone time.Time
}

// scaleWatch follows the load pods and records when each turned
// running and was removed.
type scaleWatch struct {
	mu      sync.Mutex
	pods    map[string]*podTimes
	changed chan struct{}
}

func (w *scaleWatch) pod(name string) *podTimes {
	p := w.pods[name]
	if p == nil {
		p = &podTimes{}
		w.pods[name] = p
	}
	return p
}

func (w *scaleWatch) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// follow reads watch events until ctx ends, reopening the watch from
// the last resource version seen when the API server ends it.
func (a *APIServer) follow(ctx context.Context, w *scaleWatch, log *slog.Logger) error {
	rv := "0"
	for ctx.Err() == nil {
		last, err := a.followOnce(ctx, w, rv)
		if last != "" {
			rv = last
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("the pods' watch ended; reopening it", "resource_version", rv, "err", err)
		if isGone(err) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

var errWatchGone = errors.New("watch expired (410)")

func isGone(err error) bool { return errors.Is(err, errWatchGone) }

func (a *APIServer) followOnce(ctx context.Context, w *scaleWatch, rv string) (string, error) {
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}, "labelSelector": {"app=" + ScalePodLabel}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/api/v1/namespaces/default/pods?"+q.Encode(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", &apiError{Code: resp.StatusCode}
	}
	dec := json.NewDecoder(resp.Body)
	last := ""
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			return last, err
		}
		now := time.Now()
		if ev.Type == "ERROR" {
			var st struct {
				Code int `json:"code"`
			}
			_ = json.Unmarshal(ev.Object, &st)
			if st.Code == http.StatusGone {
				return last, errWatchGone
			}
			return last, fmt.Errorf("watch error: %s", ev.Object)
		}
		var p watchedPod
		if err := json.Unmarshal(ev.Object, &p); err != nil {
			return last, fmt.Errorf("watch event %s: %w", ev.Type, err)
		}
		last = p.Metadata.ResourceVersion
		w.mu.Lock()
		t := w.pod(p.Metadata.Name)
		switch {
		case ev.Type == "DELETED":
			if t.gone.IsZero() {
				t.gone = now
			}
		case t.running.IsZero() && p.allStarted():
			t.running = now
		}
		w.mu.Unlock()
		w.signal()
	}
}

// waitAll waits until done is true of every pod, or timeout; it returns
// how many are not done.
func (w *scaleWatch) waitAll(ctx context.Context, names []string, timeout time.Duration, done func(*podTimes) bool) int {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		left := 0
		for _, n := range names {
			if !done(w.pod(n)) {
				left++
			}
		}
		w.mu.Unlock()
		if left == 0 {
			return 0
		}
		select {
		case <-w.changed:
		case <-time.After(time.Second):
		case <-deadline.C:
			return left
		case <-ctx.Done():
			return left
		}
	}
}

// paced calls do(i) for i in [0, n) at rate a second, each in its own
// goroutine (at most 64 at once), and returns when all returned.
func paced(ctx context.Context, n int, rate float64, do func(i int)) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range n {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				wg.Wait()
				return
			}
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			do(i)
		}()
	}
	wg.Wait()
}

// WaitNodesReady waits until every node is Ready.
func (a *APIServer) WaitNodesReady(ctx context.Context, nodes []NodeProcs) error {
	for _, n := range nodes {
		if err := a.WaitNodeReady(ctx, n.Name); err != nil {
			return err
		}
	}
	return nil
}

// NodeScale measures one side's nodes: idle for o.Idle once every node
// is Ready, then under o.PodsPerNode pods a node created at o.CreateRate
// a second, bound round-robin, until every one is Running, then deleted
// at the same rate until every one is gone. The requests come from the
// audit log, read at the end.
func (a *APIServer) NodeScale(ctx context.Context, o NodeScaleOptions) (ScaleReport, error) {
	log := o.Logger
	rep := ScaleReport{Side: o.Side, Version: o.Version, Nodes: len(o.Nodes), Processes: Processes(o.Nodes), PodsPerNode: o.PodsPerNode, CreateRate: o.CreateRate,
		Started: time.Now(), LoadStart: LoadAverage()}
	started := o.NodesStarted
	if started.IsZero() {
		started = rep.Started
	}
	rctx, cancel := context.WithTimeout(ctx, o.Timeout)
	err := a.EnsureDefaultServiceAccount(rctx)
	if err == nil {
		err = a.WaitNodesReady(rctx, o.Nodes)
	}
	cancel()
	if err != nil {
		return rep, fmt.Errorf("nodes not Ready: %w", err)
	}
	rep.ReadySeconds = time.Since(started).Seconds()
	log.Info("every node Ready", "side", o.Side, "nodes", len(o.Nodes), "seconds", rep.ReadySeconds)

	// Idle.
	if err := sleep(ctx, o.Settle); err != nil {
		return rep, err
	}
	s0, err := TakeSnapshot(o.Nodes, time.Now())
	if err != nil {
		return rep, err
	}
	if err := sleep(ctx, o.Idle); err != nil {
		return rep, err
	}
	s1, err := TakeSnapshot(o.Nodes, time.Now())
	if err != nil {
		return rep, err
	}
	idle := Window{From: s0.At, To: s1.At}
	rep.Idle.Usage = Usage(o.Nodes, s0, s1)
	log.Info("idle measured", "side", o.Side, "cpu_percent_per_node", rep.Idle.Usage.CPU, "pss_mb_per_node", rep.Idle.Usage.PSS)

	// Load: the watch first, then the creates.
	w := &scaleWatch{pods: map[string]*podTimes{}, changed: make(chan struct{}, 1)}
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() { watchDone <- a.follow(wctx, w, log) }()
	defer func() { stopWatch(); <-watchDone }()

	snaps := []Snapshot{}
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(o.SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				if s, err := TakeSnapshot(o.Nodes, time.Now()); err == nil {
					snaps = append(snaps, s)
				}
			}
		}
	}()

	n := o.PodsPerNode * len(o.Nodes)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("load-%05d", i)
	}
	var errMu sync.Mutex
	fail := func(what string, err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(rep.Errors) < 10 {
			rep.Errors = append(rep.Errors, what+": "+err.Error())
		}
	}
	l0, err := TakeSnapshot(o.Nodes, time.Now())
	if err != nil {
		stopSampling()
		<-sampled
		return rep, err
	}
	var profiled chan profileResult
	if o.ProfileURL != "" {
		profiled = make(chan profileResult, 1)
		d := time.Duration(float64(2*n) / o.CreateRate * float64(time.Second))
		go func() { profiled <- takeProfile(ctx, o.ProfileURL, o.ProfileOut, d) }()
	}
	log.Info("creating pods", "side", o.Side, "pods", n, "rate", o.CreateRate)
	paced(ctx, n, o.CreateRate, func(i int) {
		w.mu.Lock()
		w.pod(names[i]).created = time.Now()
		w.mu.Unlock()
		node := o.Nodes[i%len(o.Nodes)].Name
		if err := a.do(ctx, http.MethodPost, "/api/v1/namespaces/default/pods", ScalePod(names[i], node, o.Image), nil); err != nil {
			fail("create "+names[i], err)
		}
	})
	rep.CreatedSeconds = time.Since(l0.At).Seconds()
	rep.NotRunning = w.waitAll(ctx, names, o.Timeout, func(p *podTimes) bool { return !p.running.IsZero() })
	log.Info("pods Running", "side", o.Side, "not_running", rep.NotRunning, "seconds", time.Since(l0.At).Seconds())

	d0 := time.Now()
	paced(ctx, n, o.CreateRate, func(i int) {
		w.mu.Lock()
		w.pod(names[i]).deleteSent = time.Now()
		w.mu.Unlock()
		err := a.do(ctx, http.MethodDelete, "/api/v1/namespaces/default/pods/"+names[i], nil, nil)
		if err != nil && !isStatus(err, http.StatusNotFound) {
			fail("delete "+names[i], err)
		}
	})
	rep.NotDeleted = w.waitAll(ctx, names, o.Timeout, func(p *podTimes) bool { return !p.gone.IsZero() })
	l1, err := TakeSnapshot(o.Nodes, time.Now())
	stopSampling()
	<-sampled
	if err != nil {
		return rep, err
	}
	log.Info("pods gone", "side", o.Side, "not_deleted", rep.NotDeleted, "seconds", time.Since(d0).Seconds())
	if profiled != nil {
		pr := <-profiled
		rep.Profile = pr.summary
		if pr.err != nil {
			rep.Errors = append(rep.Errors, "profile: "+pr.err.Error())
		}
	}
	load := Window{From: l0.At, To: l1.At}
	rep.Load.Usage = Usage(o.Nodes, l0, l1)
	rep.Load.Usage.PeakPSS = PeakPSS(o.Nodes, append(snaps, l1))

	w.mu.Lock()
	var lastRunning, lastGone time.Time
	for _, name := range names {
		p := w.pod(name)
		if !p.running.IsZero() && !p.created.IsZero() {
			rep.Startup.Add(p.running.Sub(p.created))
			if p.running.After(lastRunning) {
				lastRunning = p.running
			}
		}
		if !p.gone.IsZero() && !p.deleteSent.IsZero() {
			rep.Deletion.Add(p.gone.Sub(p.deleteSent))
			if p.gone.After(lastGone) {
				lastGone = p.gone
			}
		}
	}
	w.mu.Unlock()
	if !lastRunning.IsZero() {
		rep.RunningSeconds = lastRunning.Sub(l0.At).Seconds()
	}
	if !lastGone.IsZero() {
		rep.DeletedSeconds = lastGone.Sub(d0).Seconds()
	}
	rep.LoadEnd = LoadAverage()

	// The audit log has every request by now (blocking mode writes an
	// event before the request is answered).
	f, err := os.Open(o.AuditLog)
	if err != nil {
		return rep, err
	}
	defer f.Close()
	join := Window{From: started, To: idle.From}
	counts, err := CountAudit(f, []Window{idle, load, join})
	if err != nil {
		return rep, err
	}
	names = names[:0]
	for _, nd := range o.Nodes {
		names = append(names, nd.Name)
	}
	rep.Idle.Requests = NodeRequestRates(counts[0].Requests, names, idle)
	rep.Idle.Failed = NodeRequestRates(counts[0].Failed, names, idle)
	rep.Load.Requests = NodeRequestRates(counts[1].Requests, names, load)
	rep.Load.Failed = NodeRequestRates(counts[1].Failed, names, load)
	rep.Join = NodeRequestRates(counts[2].Requests, names, join)
	rep.JoinSeconds = join.To.Sub(join.From).Seconds()
	if rep.NotRunning > 0 || rep.NotDeleted > 0 {
		return rep, fmt.Errorf("%d pods not Running, %d not gone within %s", rep.NotRunning, rep.NotDeleted, o.Timeout)
	}
	return rep, nil
}

type profileResult struct {
	summary *ProfileSummary
	err     error
}

// takeProfile profiles the process behind url for d, keeps the profile in
// out (when set) and summarizes it.
func takeProfile(ctx context.Context, url, out string, d time.Duration) profileResult {
	data, err := CaptureProfile(ctx, url, d)
	if err != nil {
		return profileResult{err: err}
	}
	if out != "" {
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return profileResult{err: err}
		}
	}
	sum, err := SummarizeProfile(data)
	if err != nil {
		return profileResult{err: err}
	}
	return profileResult{summary: &sum}
}
