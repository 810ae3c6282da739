package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// PodWatch is a running watch of the pods of one label selector, feeding
// a PodTracker. The API server ends watches (its request timeout, a
// restart, a load it sheds): the watch then resumes after the last
// resourceVersion it saw, so no event between the two is lost; when that
// version is gone from the API server's history (410 Gone), it lists the
// pods again and takes what changed from the list (a pod no longer
// listed is deleted), then watches from the list's version. That is
// client-go's reflector's contract, kept here in the benchmark's plain
// HTTP client (it links no client-go).
type PodWatch struct {
	api      *APIServer
	selector string

	mu      sync.Mutex
	tracker *PodTracker
	changed chan struct{}
	// err ends the watch for good (an event it cannot read).
	err    error
	cancel context.CancelFunc
	done   chan struct{}
	// rv is the resourceVersion of the last event, bookmark or list:
	// where a resumed watch starts.
	rv string
	// live are the pods seen and not seen deleted: those a list no
	// longer has were deleted while the watch was away.
	live map[string]bool
	// resumes counts the watches opened again after one ended, relists
	// the lists taken after the history was gone.
	resumes, relists int
	// failing is why the watch last ended or could not be opened, until
	// an event arrives again (a waiter that times out says it).
	failing error
}

// WatchStats are how often a watch had to be opened again.
type WatchStats struct {
	// Resumes are watches opened again after the last resourceVersion
	// seen; Relists the lists taken when it was too old (410 Gone).
	Resumes int `json:"resumes,omitempty"`
	Relists int `json:"relists,omitempty"`
}

// watchBackoff bounds the wait between two failed attempts to open a
// watch again.
var watchBackoff = [2]time.Duration{100 * time.Millisecond, 5 * time.Second}

// errGone is a watch's or list's 410 Gone: the version asked for is no
// longer in the API server's history.
var errGone = errors.New("resource version gone (410)")

// badEventError is an event the watch cannot read: opening it again
// would read it again.
type badEventError struct{ error }

// WatchPods opens a watch of namespace default's pods matching selector
// (from the watch cache's current state, as CreateUntilRunning does) and
// keeps it open, resuming it whenever the API server ends it, until
// Close or ctx ends. Only the first open's failure is returned.
func (a *APIServer) WatchPods(ctx context.Context, selector string) (*PodWatch, error) {
	wctx, cancel := context.WithCancel(ctx)
	w := &PodWatch{api: a, selector: selector, tracker: NewPodTracker(), changed: make(chan struct{}), cancel: cancel,
		done: make(chan struct{}), rv: "0", live: map[string]bool{}}
	body, err := w.open(wctx)
	if err != nil {
		cancel()
		return nil, err
	}
	go w.run(wctx, body)
	return w, nil
}

// Close ends the watch and waits until it stopped reading.
func (w *PodWatch) Close() {
	w.cancel()
	<-w.done
}

// Stats is how often the watch was opened again so far.
func (w *PodWatch) Stats() WatchStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WatchStats{Resumes: w.resumes, Relists: w.relists}
}

// open opens the watch after w.rv. It asks for no bookmarks: a
// kube-apiserver on an etcd without progress notifications (Debian's
// 3.4) refuses a watch from the cache's state (resourceVersion 0) that
// asks for them; w.rv moves on with the pods' own events, and a version
// too old to resume from is a relist.
func (w *PodWatch) open(ctx context.Context) (io.ReadCloser, error) {
	w.mu.Lock()
	rv := w.rv
	w.mu.Unlock()
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}, "labelSelector": {w.selector}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.api.URL+"/api/v1/namespaces/default/pods?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.api.Token)
	resp, err := w.api.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode == http.StatusGone {
			return nil, fmt.Errorf("watch from %s: %w", rv, errGone)
		}
		return nil, &apiError{Code: resp.StatusCode, Body: string(b)}
	}
	return resp.Body, nil
}

// run reads body, then opens the watch again each time it ends, until
// ctx ends or an event cannot be read.
func (w *PodWatch) run(ctx context.Context, body io.ReadCloser) {
	defer close(w.done)
	backoff := watchBackoff[0]
	for {
		n, err := w.read(body)
		body.Close()
		if ctx.Err() != nil {
			return
		}
		w.setFailing(err)
		var syn *json.SyntaxError
		var bad badEventError
		if errors.As(err, &syn) || errors.As(err, &bad) {
			w.fail(fmt.Errorf("watch: %w", err))
			return
		}
		relist := errors.Is(err, errGone)
		if n > 0 {
			backoff = watchBackoff[0]
		}
		for {
			if relist || n == 0 {
				// Failed or empty attempts: wait before the next, more
				// each time.
				if !relist && sleep(ctx, backoff) != nil {
					return
				}
				backoff = min(backoff*2, watchBackoff[1])
			}
			if relist {
				if err := w.relist(ctx); err != nil {
					if ctx.Err() != nil || sleep(ctx, backoff) != nil {
						return
					}
					continue
				}
				relist = false
			}
			if body, err = w.open(ctx); err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			w.setFailing(err)
			relist, n = errors.Is(err, errGone), 0
		}
		w.mu.Lock()
		w.resumes++
		w.mu.Unlock()
	}
}

// read feeds the tracker every event of body until it ends, and returns
// how many it read and why it ended (errGone for a 410 ERROR event).
func (w *PodWatch) read(body io.Reader) (int, error) {
	dec := json.NewDecoder(body)
	for n := 0; ; n++ {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			return n, err
		}
		at := time.Now()
		switch ev.Type {
		case "ERROR":
			var st struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(ev.Object, &st)
			if st.Code == http.StatusGone {
				return n, fmt.Errorf("watch: %s: %w", st.Message, errGone)
			}
			return n, fmt.Errorf("watch error: %s", ev.Object)
		case "BOOKMARK":
			var p watchedPod
			if err := json.Unmarshal(ev.Object, &p); err == nil && p.Metadata.ResourceVersion != "" {
				w.mu.Lock()
				w.rv = p.Metadata.ResourceVersion
				w.mu.Unlock()
			}
		default:
			var p watchedPod
			if err := json.Unmarshal(ev.Object, &p); err != nil {
				return n, badEventError{fmt.Errorf("watch event %s: %w", ev.Type, err)}
			}
			w.mu.Lock()
			w.observe(ev.Type, p, at)
			w.mu.Unlock()
		}
	}
}

// setFailing records why the watch ended or could not be opened.
func (w *PodWatch) setFailing(err error) {
	if err == nil {
		err = io.EOF
	}
	w.mu.Lock()
	w.failing = err
	w.mu.Unlock()
}

// observe takes one pod event into the tracker (w.mu held) and wakes the
// waiters.
func (w *PodWatch) observe(typ string, p watchedPod, at time.Time) {
	w.failing = nil
	w.tracker.observe(typ, p, at)
	if typ == "DELETED" {
		delete(w.live, p.Metadata.Name)
	} else {
		w.live[p.Metadata.Name] = true
	}
	if p.Metadata.ResourceVersion != "" {
		w.rv = p.Metadata.ResourceVersion
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// relist lists the pods (no older than the last version seen, or the
// watch cache's when that is unknown) and takes each as a change, a pod
// seen before and no longer listed as deleted, all at the list's
// arrival; the watch then resumes from the list's version.
func (w *PodWatch) relist(ctx context.Context) error {
	w.mu.Lock()
	rv := w.rv
	w.mu.Unlock()
	q := url.Values{"labelSelector": {w.selector}, "resourceVersion": {"0"}}
	if rv != "" && rv != "0" {
		q.Set("resourceVersion", rv)
		q.Set("resourceVersionMatch", "NotOlderThan")
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []watchedPod `json:"items"`
	}
	if err := w.api.do(ctx, http.MethodGet, "/api/v1/namespaces/default/pods?"+q.Encode(), nil, &list); err != nil {
		if isStatus(err, http.StatusGone) {
			w.mu.Lock()
			w.rv = "0"
			w.mu.Unlock()
		}
		return err
	}
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	listed := make(map[string]bool, len(list.Items))
	for _, p := range list.Items {
		listed[p.Metadata.Name] = true
		p.Metadata.ResourceVersion = ""
		w.observe("MODIFIED", p, at)
	}
	for name := range w.live {
		if !listed[name] {
			var p watchedPod
			p.Metadata.Name = name
			w.observe("DELETED", p, at)
		}
	}
	w.rv = list.Metadata.ResourceVersion
	w.relists++
	return nil
}

// fail ends the watch with err, waking the waiters.
func (w *PodWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
	close(w.changed)
	w.changed = make(chan struct{})
}
