package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// withRV is a pod event line of podEvent's with its resourceVersion.
func withRV(line []byte, rv int) string {
	return strings.Replace(string(line), `"metadata":{`, fmt.Sprintf(`"metadata":{"resourceVersion":"%d",`, rv), 1)
}

// brokenWatchServer answers the pod watches and lists of one script,
// one step a request, and records each request's query.
type brokenWatchServer struct {
	mu      sync.Mutex
	queries []string
	steps   []func(w http.ResponseWriter, r *http.Request)
}

func (f *brokenWatchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	i := len(f.queries)
	kind := "list"
	if r.URL.Query().Get("watch") == "1" {
		kind = "watch"
	}
	q := kind + " rv=" + r.URL.Query().Get("resourceVersion") + " match=" + r.URL.Query().Get("resourceVersionMatch") + " sel=" + r.URL.Query().Get("labelSelector")
	if kind == "watch" {
		// A kube-apiserver on etcd 3.4 refuses bookmarks from the
		// cache's state: none are asked for.
		q += " bookmarks=" + r.URL.Query().Get("allowWatchBookmarks")
	}
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	if i >= len(f.steps) {
		http.Error(w, "no more steps", http.StatusInternalServerError)
		return
	}
	f.steps[i](w, r)
}

// stream writes lines as a watch's events, then ends the response (the
// API server closing the watch) unless hold, which keeps it open until
// the client leaves.
func stream(hold bool, lines ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for _, l := range lines {
			_, _ = io.WriteString(w, l+"\n")
			w.(http.Flusher).Flush()
		}
		if hold {
			<-r.Context().Done()
		}
	}
}

func refuse(code int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"kind":"Status","code":`+fmt.Sprint(code)+`}`, code)
	}
}

func podList(rv int, pods ...[]byte) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		items := make([]string, len(pods))
		for i, p := range pods {
			// The object of an event line: {"type":...,"object":OBJ}.
			s := string(p)
			items[i] = s[strings.Index(s, `"object":`)+len(`"object":`) : len(s)-1]
		}
		fmt.Fprintf(w, `{"kind":"PodList","metadata":{"resourceVersion":"%d"},"items":[%s]}`, rv, strings.Join(items, ","))
	}
}

// TestPodWatchResumesWithoutLosingAnEvent: the API server ends the watch
// mid-stream, after a bookmark, with a 410 ERROR event, refuses the next
// open (500, then 410): the watch opens again after the last
// resourceVersion it saw each time, lists the pods after a 410 (no older
// than that version) and takes a pod the list no longer has as deleted,
// then watches from the list's version; every change reaches the
// tracker.
func TestPodWatchResumesWithoutLosingAnEvent(t *testing.T) {
	saved := watchBackoff
	watchBackoff = [2]time.Duration{time.Millisecond, 10 * time.Millisecond}
	defer func() { watchBackoff = saved }()
	f := &brokenWatchServer{steps: []func(http.ResponseWriter, *http.Request){
		stream(false,
			withRV(podEvent("ADDED", "a", "Pending", ""), 1),
			withRV(podEvent("MODIFIED", "a", "Running", "running"), 2),
			withRV(podEvent("ADDED", "b", "Pending", ""), 3),
			// Cut in the middle of an event.
			`{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"4","name":"b"`),
		stream(false,
			withRV(podEvent("MODIFIED", "b", "Running", "running"), 4),
			`{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"6"}}}`),
		stream(false, `{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version: 6 (8)","reason":"Expired","code":410}}`),
		// a was deleted while the history was lost; c came and ran.
		podList(9, podEvent("MODIFIED", "b", "Running", "running"), podEvent("MODIFIED", "c", "Running", "running")),
		refuse(http.StatusInternalServerError),
		refuse(http.StatusGone),
		podList(11, podEvent("MODIFIED", "b", "Running", "running"), podEvent("MODIFIED", "c", "Running", "running")),
		stream(true, withRV(podEvent("DELETED", "b", "Running", "running"), 12)),
	}}
	w, ctx := watchOf(t, f)
	started, err := w.WaitStarted(ctx, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WaitGone(ctx, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if !started["a"].Before(started["b"]) || !started["b"].Before(started["c"]) {
		t.Errorf("started %v: want a, then b (the resumed watch), then c (the list)", started)
	}
	if _, ok := w.tracker.Gone("c"); ok {
		t.Error("c gone: it is listed")
	}
	f.mu.Lock()
	got := strings.Join(f.queries, "\n")
	f.mu.Unlock()
	want := strings.Join([]string{
		"watch rv=0 match= sel=run=x bookmarks=",
		"watch rv=3 match= sel=run=x bookmarks=",
		"watch rv=6 match= sel=run=x bookmarks=",
		"list rv=6 match=NotOlderThan sel=run=x",
		"watch rv=9 match= sel=run=x bookmarks=",
		"watch rv=9 match= sel=run=x bookmarks=",
		"list rv=9 match=NotOlderThan sel=run=x",
		"watch rv=11 match= sel=run=x bookmarks=",
	}, "\n")
	if got != want {
		t.Errorf("requests:\n%s\nwant:\n%s", got, want)
	}
	if s := w.Stats(); s.Resumes != 3 || s.Relists != 2 {
		t.Errorf("stats %+v, want 3 resumes (after the cut, the bookmark, the lists) and 2 relists", s)
	}
}

// TestPodWatchEndsAtAnEventItCannotRead: an event whose object is not a
// pod would be read again by a resumed watch: the watch ends, and the
// waiters say so.
func TestPodWatchEndsAtAnEventItCannotRead(t *testing.T) {
	f := &brokenWatchServer{steps: []func(http.ResponseWriter, *http.Request){
		stream(true, `{"type":"ADDED","object":{"metadata":{"name":7}}}`),
	}}
	w, ctx := watchOf(t, f)
	defer w.Close()
	if _, err := w.WaitStarted(ctx, []string{"a"}); err == nil || !strings.Contains(err.Error(), "the watch ended") {
		t.Errorf("wait: %v, want the watch ended", err)
	}
}

// watchOf serves f and opens the bench's pod watch on it, with a context
// of 20 s; the server stops when the test ends.
func watchOf(t *testing.T, f http.Handler) (*PodWatch, context.Context) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	api := &APIServer{URL: srv.URL, Token: "tok", HTTP: srv.Client()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	w, err := api.WatchPods(ctx, "run=x")
	if err != nil {
		t.Fatal(err)
	}
	return w, ctx
}
