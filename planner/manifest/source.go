package manifest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// ChangeType is the kind of a pod change found in the manifest directory.
type ChangeType int

const (
	// Added: a pod appeared.
	Added ChangeType = iota + 1
	// Updated: a pod's manifest changed.
	Updated
	// Removed: a pod's manifest (or its file) disappeared.
	Removed
)

func (t ChangeType) String() string {
	switch t {
	case Added:
		return "added"
	case Updated:
		return "updated"
	case Removed:
		return "removed"
	}
	return "unknown"
}

// Change is one pod added, updated or removed.
type Change struct {
	// Type of the change.
	Type ChangeType
	// File that defines (or, for Removed, defined) the pod.
	File string
	// Pod as parsed (for Removed: as it was last parsed).
	Pod *syncpodv1.Pod
	// Warnings found in the pod's file.
	Warnings []Issue
}

// FileError is a file that could not be read or parsed. Its pods are left
// as they were.
type FileError struct {
	// File is the path.
	File string
	// Err says why; a *ParseError for parse errors.
	Err error
	// Kept are the pods of the file's last good version, which stay
	// desired as they were (empty for a file never parsed well).
	Kept []*syncpodv1.Pod
}

// Diff is the outcome of one scan.
type Diff struct {
	// Changes sorted by namespace, then name.
	Changes []Change
	// Errors sorted by file.
	Errors []FileError
	// ConfigChanges are the ConfigMaps and Secrets added, updated or
	// removed, sorted by kind, namespace and name.
	ConfigChanges []ConfigChange
}

// Empty reports a scan that found nothing new.
func (d Diff) Empty() bool {
	return len(d.Changes) == 0 && len(d.Errors) == 0 && len(d.ConfigChanges) == 0
}

// Options configure a Source.
type Options struct {
	// Dir is the manifest directory. Required.
	Dir string
	// Interval between scans. Default 5 s.
	Interval time.Duration
	// NewTicker returns a channel ticking every d and a stop function.
	// Default: time.NewTicker. Tests inject a fake.
	NewTicker func(d time.Duration) (<-chan time.Time, func())
	// DisableWatch turns off file-system notifications: Run then only
	// scans at every Interval. By default Run also scans as soon as a
	// manifest file changes (inotify), and the periodic scan is the safety
	// net for what notifications cannot see (network file systems, lost
	// events).
	DisableWatch bool
	// Settle is how long Run waits after a notification for more of them
	// before it reads a changed file whose writer it cannot see (see
	// WriterWait), so that a file written in several pieces is read once,
	// whole. It waits at most ten times this behind a stream of writes.
	// Default 5 ms. A file the kernel can vouch for is read at once.
	Settle time.Duration
	// WriterWait is how long a manifest file that some process keeps open
	// for writing is left unread (its last version read stays in force);
	// after that it is read as it is. On Linux a scan asks the kernel
	// whether anyone has a file open for writing (a read lease is granted
	// only when nobody has), so a file is read the moment its writer
	// closes it: no fixed wait after a notification, and no half-written
	// file however slowly it is written. Run looks again every few
	// milliseconds while a writer holds one. Where the kernel cannot tell
	// (another owner's file without CAP_LEASE, NFS) Run falls back to
	// Settle. Default 2 s.
	WriterWait time.Duration
	// RefuseAPIReferences refuses, as the kubelet does, a pod that refers
	// to a Kubernetes API object (a ConfigMap, a Secret, a service
	// account, a claim...): "static pods may not reference configmaps"
	// . A node joined to a cluster sets it, since such a pod's
	// mirror could not be made; a standalone syncpod reads ConfigMaps and
	// Secrets from the directory itself.
	RefuseAPIReferences bool
	// Logger for watch problems. Default: discard.
	Logger *slog.Logger
	// Now is the clock for WriterWait. Default time.Now.
	Now func() time.Time
}

// Source watches a manifest directory by file-system notifications and by
// polling. Scan and Run must not be called concurrently.
type Source struct {
	opts  Options
	files map[string]*fileState // by path
	pods  map[string]owned      // desired pods by "namespace/name"
	// configs are the desired ConfigMaps and Secrets (configsource.go).
	configs map[string]ownedConfig
	// writing holds the files found open for writing, with when that was
	// first seen; they are left unread until WriterWait has passed.
	writing map[string]*writer
	// read reads a manifest file (readManifest; tests swap it).
	read func(path string, check bool) ([]byte, writeState, error)
}

// writer is a file found open for writing.
type writer struct {
	since time.Time // first seen open
	told  bool      // its reading past WriterWait was logged
}

// writeState is what a read could tell of a file's writers.
type writeState int

const (
	// writeUnknown: read, but whether a writer still had the file open
	// is not known.
	writeUnknown writeState = iota
	// writeClosed: read while no process had the file open for writing.
	writeClosed
	// writeOpen: a process has the file open for writing; not read.
	writeOpen
)

// pending counts the changed files a scan left unread.
type pending struct {
	// writing: files a process still has open for writing.
	writing int
	// unsure: changed files read with no way to know whether their
	// writer was done (left unread by a scan that trusts only whole
	// files).
	unsure int
}

type fileState struct {
	hash  [sha256.Size]byte
	pods  []*syncpodv1.Pod // last good parse
	cms   []*syncpodv1.ConfigMap
	secs  []*syncpodv1.Secret
	warns []Issue
	err   error
}

type owned struct {
	pod  *syncpodv1.Pod
	file string
}

// NewSource returns a source for opts.Dir; nothing is read until Scan.
func NewSource(opts Options) *Source {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.Settle <= 0 {
		opts.Settle = 5 * time.Millisecond
	}
	if opts.WriterWait <= 0 {
		opts.WriterWait = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewTicker == nil {
		opts.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	return &Source{opts: opts, files: map[string]*fileState{}, pods: map[string]owned{}, configs: map[string]ownedConfig{},
		writing: map[string]*writer{}, read: readManifest}
}

// isManifest reports whether a directory entry is a manifest file: a
// regular file named *.yaml, *.yml or *.json, not hidden.
func isManifest(e os.DirEntry) bool {
	name := e.Name()
	if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func podKey(p *syncpodv1.Pod) string {
	return validation.NamespaceOrDefault(p.GetNamespace()) + "/" + p.GetName()
}

// Scan reads the directory once and returns what changed since the last
// scan. An unreadable directory is an error and changes nothing. A file
// that a process has open for writing is left as it was last read (or
// absent, if never read) until its writer closes it or Options.WriterWait
// has passed.
func (s *Source) Scan() (Diff, error) {
	d, _, err := s.scan(false)
	return d, err
}

// scan is Scan; with wholeOnly it also leaves unread every changed file
// that it cannot tell is whole (no lease to be had), and counts them, so
// that Run can wait for quiet before it reads them.
func (s *Source) scan(wholeOnly bool) (Diff, pending, error) {
	var wait pending
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return Diff{}, wait, fmt.Errorf("read manifest dir: %w", err)
	}
	var diff Diff
	seen := map[string]bool{}
	var paths []string
	for _, e := range entries {
		if isManifest(e) {
			paths = append(paths, filepath.Join(s.opts.Dir, e.Name()))
		}
	}
	sort.Strings(paths)
	now := s.opts.Now()
	for _, path := range paths {
		seen[path] = true
		data, state, err := s.read(path, true)
		if err == nil && state == writeOpen {
			w := s.writing[path]
			if w == nil {
				w = &writer{since: now}
				s.writing[path] = w
				s.opts.Logger.Debug("manifest file open for writing; read once its writer closes it", "file", path, "writer_wait", s.opts.WriterWait)
			}
			if now.Sub(w.since) < s.opts.WriterWait {
				wait.writing++
				continue // its last version read stays in force
			}
			// Its writer has kept it open for WriterWait: read it as
			// it is, at every scan until that writer lets go.
			if !w.told {
				w.told = true
				s.opts.Logger.Info("manifest file still open for writing; read as it is", "file", path, "open_for", now.Sub(w.since).Round(time.Millisecond))
			}
			data, _, err = s.read(path, false)
		} else {
			delete(s.writing, path)
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				delete(seen, path) // removed between ReadDir and ReadFile
				continue
			}
			diff.Errors = append(diff.Errors, s.fail(path, [sha256.Size]byte{}, err)...)
			continue
		}
		sum := sha256.Sum256(data)
		st := s.files[path]
		if st != nil && st.hash == sum {
			continue // unchanged (a broken file was reported when it changed)
		}
		if wholeOnly && state == writeUnknown {
			wait.unsure++
			continue
		}
		objs, warns, perr := ParseObjects(data)
		pods := objs.Pods
		if perr == nil {
			perr = refuseEphemeral(pods)
		}
		if perr == nil && s.opts.RefuseAPIReferences {
			perr = refuseAPIReferences(objs)
		}
		if perr != nil {
			diff.Errors = append(diff.Errors, s.fail(path, sum, perr)...)
			continue
		}
		for _, p := range pods {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[SourceAnnotation] = SourceFile
		}
		s.files[path] = &fileState{hash: sum, pods: pods, cms: objs.ConfigMaps, secs: objs.Secrets, warns: warns}
	}
	for path := range s.files {
		if !seen[path] {
			delete(s.files, path)
		}
	}
	for path := range s.writing {
		if !seen[path] {
			delete(s.writing, path)
		}
	}

	// Desired pods: every good file's pods, plus the last good pods of
	// broken files. A pod defined twice stays with its previous owner, else
	// goes to the first file by name.
	candidates := map[string][]string{}
	byFile := map[string]map[string]*syncpodv1.Pod{}
	var files []string
	for path := range s.files {
		files = append(files, path)
	}
	sort.Strings(files)
	for _, path := range files {
		byFile[path] = map[string]*syncpodv1.Pod{}
		for _, p := range s.files[path].pods {
			k := podKey(p)
			if _, dup := byFile[path][k]; dup {
				continue // duplicate within one file: first wins
			}
			byFile[path][k] = p
			candidates[k] = append(candidates[k], path)
		}
	}
	desired := map[string]owned{}
	for k, owners := range candidates {
		owner := owners[0]
		if prev, ok := s.pods[k]; ok {
			for _, o := range owners {
				if o == prev.file {
					owner = o
				}
			}
		}
		desired[k] = owned{pod: byFile[owner][k], file: owner}
		for _, o := range owners {
			if o != owner {
				diff.Errors = append(diff.Errors, FileError{File: o, Err: fmt.Errorf("pod %s is already defined in %s; ignored here", k, owner)})
			}
		}
	}

	for k, d := range desired {
		prev, ok := s.pods[k]
		switch {
		case !ok:
			diff.Changes = append(diff.Changes, Change{Type: Added, File: d.file, Pod: d.pod, Warnings: s.files[d.file].warns})
		case !proto.Equal(prev.pod, d.pod):
			diff.Changes = append(diff.Changes, Change{Type: Updated, File: d.file, Pod: d.pod, Warnings: s.files[d.file].warns})
		}
	}
	for k, prev := range s.pods {
		if _, ok := desired[k]; !ok {
			diff.Changes = append(diff.Changes, Change{Type: Removed, File: prev.file, Pod: prev.pod})
		}
	}
	s.pods = desired
	s.diffConfigs(&diff)

	sort.Slice(diff.Changes, func(i, j int) bool { return podKey(diff.Changes[i].Pod) < podKey(diff.Changes[j].Pod) })
	sort.SliceStable(diff.Errors, func(i, j int) bool { return diff.Errors[i].File < diff.Errors[j].File })
	return diff, wait, nil
}

// SourceAnnotation marks a pod that comes from a static manifest (value
// SourceFile), as the kubelet marks its static pods; the planner uses it to
// forget static pods whose file went away while it was not running. The
// node agent marks the pods it takes from the API server with SourceAPI.
const (
	SourceAnnotation = validation.SourceAnnotation
	SourceFile       = "file"
	SourceAPI        = validation.SourceAPI
)

// Owns reports whether the last scan found a manifest for the pod.
func (s *Source) Owns(namespace, name string) bool {
	_, ok := s.pods[validation.NamespaceOrDefault(namespace)+"/"+name]
	return ok
}

// Retry makes the next Scan report changes again that were not carried
// out: an added or updated pod as added, a removed one as removed.
func (s *Source) Retry(failed []Change) {
	for _, c := range failed {
		k := podKey(c.Pod)
		switch c.Type {
		case Added, Updated:
			delete(s.pods, k)
		case Removed:
			s.pods[k] = owned{pod: c.Pod, file: c.File}
		}
	}
}

// fail records a broken file: its last good pods stay desired. It returns
// the error to report, or nothing when this exact content was reported
// before.
func (s *Source) fail(path string, sum [sha256.Size]byte, err error) []FileError {
	st := s.files[path]
	if st == nil {
		st = &fileState{}
		s.files[path] = st
	}
	if st.err != nil && st.hash == sum && sum != ([sha256.Size]byte{}) {
		return nil
	}
	st.hash, st.err = sum, err
	return []FileError{{File: path, Err: err, Kept: st.pods}}
}

// Run scans at once, then whenever a manifest file in the directory
// changes (unless Options.DisableWatch) and at every tick, until ctx ends,
// handing every non-empty Diff to apply. apply returns the changes it could
// not carry out (say, a pod re-added while its old incarnation still
// terminates); they are handed over again on the next scan. A directory
// that cannot be read is reported as a FileError for the directory itself
// (once per distinct error); nothing changes until it can be read again. A
// directory that does not exist yet, or is removed and made again, is
// watched again from the first tick that finds it.
//
// A notification is followed by a scan at once, which reads only the files
// the kernel vouches for (nobody has them open for writing). While a
// writer still holds a file, Run looks again after 1 ms, then twice as
// long each time (up to 50 ms), until the writer lets go or
// Options.WriterWait has passed. A changed file the kernel cannot vouch for
// is read once no notification has come for Options.Settle.
func (s *Source) Run(ctx context.Context, apply func(context.Context, Diff) (failed []Change)) error {
	tick, stop := s.opts.NewTicker(s.opts.Interval)
	defer stop()
	var (
		dw   *dirWatch
		wake <-chan struct{}
	)
	if !s.opts.DisableWatch {
		w, err := newDirWatch(s.opts.Dir, s.opts.Logger)
		if err != nil {
			s.opts.Logger.Warn("cannot watch the manifest dir; scanning at the interval only",
				"dir", s.opts.Dir, "interval", s.opts.Interval, "err", err)
		} else {
			dw, wake = w, w.wake
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); dw.run(wctx) }()
			defer func() { cancel(); dw.close(); <-done }()
		}
	}
	lastDirErr := ""
	wholeOnly := false // after a notification: read only what the kernel vouches for
	var poll time.Duration
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	for {
		d, wait, err := s.scan(wholeOnly)
		switch {
		case err != nil && err.Error() != lastDirErr:
			lastDirErr = err.Error()
			d = Diff{Errors: []FileError{{File: s.opts.Dir, Err: err}}}
		case err == nil:
			lastDirErr = ""
		}
		if !d.Empty() {
			s.Retry(apply(ctx, d))
		}
		if wait.unsure > 0 {
			// Changed files whose writers cannot be seen: read them once
			// the notifications have stopped for a while.
			if !s.settle(ctx, wake) {
				return ctx.Err()
			}
			wholeOnly = false
			continue
		}
		if wait.writing > 0 {
			poll = min(max(2*poll, time.Millisecond), maxWriterPoll)
			again.Reset(poll)
		} else {
			poll = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if dw != nil {
				dw.rearm()
			}
			wholeOnly = false
		case <-wake:
			wholeOnly = true
		case <-again.C:
			wholeOnly = true
		}
		again.Stop()
	}
}

// maxWriterPoll bounds the wait between two looks at a file a writer
// holds open.
const maxWriterPoll = 50 * time.Millisecond

// settle waits until no notification has come for Options.Settle, or ten
// times that in all; false when ctx ended first.
func (s *Source) settle(ctx context.Context, wake <-chan struct{}) bool {
	quiet := time.NewTimer(s.opts.Settle)
	defer quiet.Stop()
	limit := time.NewTimer(10 * s.opts.Settle)
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-wake:
			quiet.Reset(s.opts.Settle)
		case <-quiet.C:
			return true
		case <-limit.C:
			return true
		}
	}
}

// refuseEphemeral refuses static pods with ephemeral containers, as the
// kubelet's file source does (its create validation): ephemeral
// containers are only ever added to a running pod.
func refuseEphemeral(pods []*syncpodv1.Pod) error {
	var issues []Issue
	for _, p := range pods {
		if len(p.GetSpec().GetEphemeralContainers()) > 0 {
			issues = append(issues, Issue{Path: "spec.ephemeralContainers", Severity: Error,
				Message: fmt.Sprintf("cannot be set on create (pod %s): ephemeral containers are added to a running pod, never to a static one", p.GetName())})
		}
	}
	if len(issues) == 0 {
		return nil
	}
	return &ParseError{Issues: issues}
}

// refuseAPIReferences refuses the file when one of its pods refers to a
// Kubernetes API object, with the kubelet's message.
func refuseAPIReferences(objs Objects) error {
	var issues []Issue
	for i, p := range objs.Pods {
		if ref := objs.APIReferences[i]; ref != "" {
			issues = append(issues, Issue{Path: "spec", Severity: Error,
				Message: fmt.Sprintf("static pods may not reference %s (pod %s)", ref, p.GetName())})
		}
	}
	if len(issues) == 0 {
		return nil
	}
	return &ParseError{Issues: issues}
}
