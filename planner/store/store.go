package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/internal/boltfile"
	"github.com/syncpod/syncpod/planner/allocation"
	"github.com/syncpod/syncpod/planner/events"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Options configure a Store.
type Options struct {
	// Path of the bbolt file. Required. Created with mode 0600.
	Path string
	// OpenTimeout bounds the wait for the file lock (another planner holding
	// it). Default 1 s.
	OpenTimeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Validate judges a pod before it is stored (namespace already
	// defaulted; uid may be empty). Required: wire validate.Pod here. Its
	// error text should list every field error.
	Validate func(*syncpodv1.Pod) error
	// NewUID returns a fresh pod uid. Default: random RFC 4122 v4 UUIDs.
	NewUID func() (string, error)
	// MaxEvents bounds the events kept per pod. Default
	// events.DefaultMaxPerPod.
	MaxEvents int
	// WatchBuffer bounds each watcher's queue of pending changes. Default 256.
	WatchBuffer int
	// Capacity is what the node offers its pods, against which a resize
	// of a pod's resources is admitted. Zero fields: unbounded.
	Capacity allocation.Capacity
}

// Store is the desired-pod database. Safe for concurrent use.
type Store struct {
	db   *bolt.DB
	opts Options
	hub  *hub

	// mu serialises writes with their publication to watchers, and
	// Subscribe's snapshot with both, so a watcher never misses or repeats
	// a change.
	mu sync.Mutex

	// deferred are the uids of the records whose resize is Deferred
	// the only ones retryDeferred re-decides: kept as the
	// records are written, under mu, so a write that frees room need
	// not read every record to learn that nothing waits. A transaction
	// that wrote and then failed leaves it stale (deferredStale), and the
	// next write transaction rebuilds it from the file.
	deferred      map[string]struct{}
	deferredStale bool
	// wroteInTx: the current write transaction changed deferred.
	wroteInTx bool

	// failCommit, set only by this package's tests, fails a CommitSync
	// after it changed the record, before the transaction commits.
	failCommit func() error
	// cfgCh signals ConfigMap and Secret changes (config.go).
	cfgOnce sync.Once
	cfgCh   chan struct{}
}

// What to do about a damaged file, said in every ErrCorrupt message
// ({path} is the file's path).
const corruptAdvice = "stop the planner, move the file aside (mv {path} {path}.corrupt) and restore it from a backup; " +
	"starting without it makes the planner forget every desired pod, and housekeeping then removes their containers as orphans"

// Open opens (creating if needed) the database at opts.Path and brings its
// schema up to date.
func Open(opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("store: Path is required")
	}
	if opts.Validate == nil {
		return nil, errors.New("store: Validate is required")
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewUID == nil {
		opts.NewUID = NewUUID
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = events.DefaultMaxPerPod
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = 256
	}
	fo := boltfile.Options{Timeout: opts.OpenTimeout, Service: "planner", CorruptAdvice: corruptAdvice}
	db, err := boltfile.OpenMigrated(opts.Path, fo, func(tx *bolt.Tx) error { return migrate(tx, migrations()) })
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, opts: opts, hub: newHub(), deferredStale: true}
	if err := db.View(s.indexDeferred); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// indexDeferred rebuilds deferred from the records in tx.
func (s *Store) indexDeferred(tx *bolt.Tx) error {
	recs, err := listTx(tx, Filter{})
	if err != nil {
		return err
	}
	s.deferred = map[string]struct{}{}
	for _, r := range recs {
		s.noteDeferred(r)
	}
	s.deferredStale = false
	return nil
}

// noteDeferred records whether rec's resize is Deferred.
func (s *Store) noteDeferred(rec *plannerv1.PodRecord) {
	if rec.GetAllocation().GetPendingReason() == allocation.ReasonDeferred {
		s.deferred[rec.GetPod().GetUid()] = struct{}{}
	} else {
		delete(s.deferred, rec.GetPod().GetUid())
	}
}

// write runs fn in a write transaction (s.mu held), keeping deferred
// right: rebuilt first when stale, marked stale when fn wrote records
// and the transaction then did not commit.
func (s *Store) write(fn func(tx *bolt.Tx) error) error {
	s.wroteInTx = false
	err := s.db.Update(func(tx *bolt.Tx) error {
		if s.deferredStale {
			if err := s.indexDeferred(tx); err != nil {
				return err
			}
		}
		return fn(tx)
	})
	if err != nil && s.wroteInTx {
		s.deferredStale = true
	}
	return err
}

// Close ends every watch and closes the file.
func (s *Store) Close() error {
	s.hub.closeAll()
	return s.db.Close()
}

// Stats are counters about the store, for metrics.
type Stats struct {
	// WatchResyncs counts watcher queues replaced by a RESYNC because the
	// watcher fell behind.
	WatchResyncs uint64
	// Watchers is the number of open subscriptions.
	Watchers int
}

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	return Stats{WatchResyncs: s.hub.resyncs.Load(), Watchers: s.hub.count()}
}

// NewUUID returns a random RFC 4122 version 4 UUID from crypto/rand.
func NewUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// errRollback ends a read-write transaction that found nothing to change:
// bbolt commits (and fsyncs) even an empty transaction, so unchanged
// writes roll back instead.
var errRollback = errors.New("nothing to change")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func podKey(namespace, name string) []byte { return []byte(namespace + "/" + name) }

func readRecord(b *bolt.Bucket, key []byte) (*plannerv1.PodRecord, error) {
	raw := b.Get(key)
	if raw == nil {
		return nil, nil
	}
	rec := &plannerv1.PodRecord{}
	if err := proto.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("decode pod %s: %w", key, err)
	}
	return rec, nil
}

// writeRecord stores rec in tx (run by write).
func (s *Store) writeRecord(tx *bolt.Tx, rec *plannerv1.PodRecord) error {
	s.wroteInTx = true
	s.noteDeferred(rec)
	p := rec.GetPod()
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
	if err != nil {
		return err
	}
	key := podKey(p.GetNamespace(), p.GetName())
	if err := tx.Bucket(bucketPods).Put(key, raw); err != nil {
		return err
	}
	// Most writes are of a pod already stored under its uid: putting
	// the same index entry again would dirty the index's page too, one
	// more page for the commit to write.
	uids, uid := tx.Bucket(bucketUIDs), []byte(p.GetUid())
	if bytes.Equal(uids.Get(uid), key) {
		return nil
	}
	return uids.Put(uid, key)
}

// sameUserFields reports whether a and b agree on everything a user sets.
func sameUserFields(a, b *syncpodv1.Pod) bool {
	return a.GetName() == b.GetName() && a.GetNamespace() == b.GetNamespace() &&
		a.GetSourceGeneration() == b.GetSourceGeneration() &&
		equalMaps(a.GetLabels(), b.GetLabels()) && equalMaps(a.GetAnnotations(), b.GetAnnotations()) &&
		proto.Equal(a.GetSpec(), b.GetSpec()) && equalMaps(a.GetServiceEnvironment(), b.GetServiceEnvironment())
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Apply creates or updates the desired pod identified by namespace/name.
// The input is not modified. It returns the pod as stored and what
// happened: CREATED (uid assigned when empty, generation 1, creation_time
// now), UPDATED (generation+1 when the spec changed; labels, annotations
// or the Service environment or the source generation alone keep the
// generation, R-20.4, R-19.2) or UNCHANGED (nothing written). Errors:
// ErrInvalid (nothing stored), ErrUIDMismatch, ErrTerminating.
func (s *Store) Apply(ctx context.Context, in *syncpodv1.Pod) (*syncpodv1.Pod, plannerv1.ApplyResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if in == nil {
		return nil, 0, invalidf("pod: required")
	}
	p := proto.Clone(in).(*syncpodv1.Pod)
	// Planner-owned fields are ignored on input.
	p.Generation = 0
	p.CreationTime = nil
	p.DeletionTime = nil
	p.DeletionGracePeriodSeconds = nil
	if p.Namespace == "" {
		p.Namespace = validation.DefaultNamespace
	}
	var errs []error
	if strings.Contains(p.Name, "/") {
		errs = append(errs, errors.New("name: must not contain '/'"))
	}
	if strings.Contains(p.Namespace, "/") {
		errs = append(errs, errors.New("namespace: must not contain '/'"))
	}
	if err := s.opts.Validate(p); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		result  plannerv1.ApplyResult
		old     *plannerv1.PodRecord
		stored  *plannerv1.PodRecord
		retried [][2]*plannerv1.PodRecord
	)
	now := s.opts.Now()
	err := s.write(func(tx *bolt.Tx) error {
		var err error
		old, err = readRecord(tx.Bucket(bucketPods), podKey(p.Namespace, p.Name))
		if err != nil {
			return err
		}
		if old == nil {
			if p.Uid == "" {
				if p.Uid, err = s.opts.NewUID(); err != nil {
					return fmt.Errorf("new uid: %w", err)
				}
			} else if tx.Bucket(bucketUIDs).Get([]byte(p.Uid)) != nil {
				return fmt.Errorf("%w: uid %s belongs to another pod", ErrUIDMismatch, p.Uid)
			}
			p.Generation = 1
			p.CreationTime = timestamppb.New(now)
			stored = &plannerv1.PodRecord{Pod: p, Allocation: allocation.Initial(p)}
			result = plannerv1.ApplyResult_APPLY_RESULT_CREATED
			return s.writeRecord(tx, stored)
		}
		cur := old.GetPod()
		if p.Uid == "" {
			p.Uid = cur.GetUid()
		}
		if p.Uid != cur.GetUid() {
			return fmt.Errorf("%w: %s/%s has uid %s, not %s (delete it first)", ErrUIDMismatch, p.Namespace, p.Name, cur.GetUid(), p.Uid)
		}
		// A terminating pod takes no apply, not even an identical one:
		// "unchanged" would hide that it is about to be removed.
		if cur.GetDeletionTime() != nil {
			return fmt.Errorf("%w: %s/%s", ErrTerminating, p.Namespace, p.Name)
		}
		if sameUserFields(p, cur) {
			result = plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED
			stored = old
			return errRollback
		}
		p.Generation = cur.GetGeneration()
		if !proto.Equal(p.GetSpec(), cur.GetSpec()) {
			p.Generation++
		}
		p.CreationTime = cur.GetCreationTime()
		stored = proto.Clone(old).(*plannerv1.PodRecord)
		stored.Pod = p
		// a change of the resources is admitted, or waits.
		// Only a change of resources is weighed against the others.
		var others []*syncpodv1.Pod
		if allocation.NeedsRoom(p, allocationOf(old)) {
			if others, err = s.holders(tx, p.GetUid()); err != nil {
				return err
			}
		}
		stored.Allocation = allocation.Decide(p, allocationOf(old), others, s.opts.Capacity)
		result = plannerv1.ApplyResult_APPLY_RESULT_UPDATED
		if err := s.writeRecord(tx, stored); err != nil {
			return err
		}
		retried, err = s.retryDeferred(tx)
		return err
	})
	if err != nil && !errors.Is(err, errRollback) {
		return nil, 0, err
	}
	if result != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
		if result == plannerv1.ApplyResult_APPLY_RESULT_CREATED {
			old = nil
		}
		s.hub.publish(old, stored, now)
	}
	s.publishRetried(retried, now)
	return proto.Clone(stored.GetPod()).(*syncpodv1.Pod), result, nil
}

// normaliseRef validates a reference and defaults its namespace.
func normaliseRef(ref *plannerv1.PodRef) (*plannerv1.PodRef, error) {
	if ref == nil || (ref.GetName() == "" && ref.GetUid() == "") {
		return nil, invalidf("pod: name or uid is required")
	}
	out := proto.Clone(ref).(*plannerv1.PodRef)
	if out.Namespace == "" {
		out.Namespace = validation.DefaultNamespace
	}
	return out, nil
}

// lookup finds a record by reference in tx; nil when absent.
func lookup(tx *bolt.Tx, ref *plannerv1.PodRef) (*plannerv1.PodRecord, error) {
	var key []byte
	if ref.GetName() != "" {
		key = podKey(ref.GetNamespace(), ref.GetName())
	} else {
		key = tx.Bucket(bucketUIDs).Get([]byte(ref.GetUid()))
		if key == nil {
			return nil, nil
		}
	}
	rec, err := readRecord(tx.Bucket(bucketPods), key)
	if err != nil || rec == nil {
		return nil, err
	}
	if ref.GetUid() != "" && rec.GetPod().GetUid() != ref.GetUid() {
		return nil, nil
	}
	return rec, nil
}

func notFound(ref *plannerv1.PodRef) error {
	if ref.GetName() == "" {
		return fmt.Errorf("%w: uid %s", ErrNotFound, ref.GetUid())
	}
	if ref.GetUid() != "" {
		return fmt.Errorf("%w: %s/%s with uid %s", ErrNotFound, ref.GetNamespace(), ref.GetName(), ref.GetUid())
	}
	return fmt.Errorf("%w: %s/%s", ErrNotFound, ref.GetNamespace(), ref.GetName())
}

// Get returns a copy of the record named by ref (namespace/name, uid, or
// both, which must then agree). ErrNotFound when absent.
func (s *Store) Get(ctx context.Context, ref *plannerv1.PodRef) (*plannerv1.PodRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ref, err := normaliseRef(ref)
	if err != nil {
		return nil, err
	}
	var rec *plannerv1.PodRecord
	err = s.db.View(func(tx *bolt.Tx) error {
		var err error
		rec, err = lookup(tx, ref)
		return err
	})
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, notFound(ref)
	}
	return rec, nil
}

// List returns the records passing f, sorted by namespace then name.
func (s *Store) List(ctx context.Context, f Filter) ([]*plannerv1.PodRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*plannerv1.PodRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = listTx(tx, f)
		return err
	})
	return out, err
}

func listTx(tx *bolt.Tx, f Filter) ([]*plannerv1.PodRecord, error) {
	var out []*plannerv1.PodRecord
	err := tx.Bucket(bucketPods).ForEach(func(k, v []byte) error {
		rec := &plannerv1.PodRecord{}
		if err := proto.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("decode pod %s: %w", k, err)
		}
		if f.Matches(rec) {
			out = append(out, rec)
		}
		return nil
	})
	// Keys are "<namespace>/<name>", and '/' sorts below every character
	// allowed in a name, but sort explicitly rather than rely on it.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].GetPod(), out[j].GetPod()
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return out, err
}

// MarkDeleted marks the pod as terminating: deletion_time = now and
// deletion_grace_period_seconds = grace, or, when grace is nil, the pod's
// termination grace period (30 s when unset). Marking an already
// terminating pod again only shortens its grace period, never lengthens it
// (as the Kubernetes API server does). Errors: ErrNotFound, ErrInvalid for a
// negative grace.
func (s *Store) MarkDeleted(ctx context.Context, ref *plannerv1.PodRef, grace *int64) (*syncpodv1.Pod, error) {
	if grace != nil && *grace < 0 {
		return nil, invalidf("grace_period_seconds: must be >= 0, got %d", *grace)
	}
	var out *syncpodv1.Pod
	err := s.update(ctx, ref, func(rec *plannerv1.PodRecord) (bool, error) {
		p := rec.GetPod()
		g := validation.DefaultGracePeriodSeconds
		if v := p.GetSpec().TerminationGracePeriodSeconds; v != nil {
			g = *v
		}
		if grace != nil {
			g = *grace
		}
		out = p
		if p.DeletionTime != nil {
			if p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds <= g {
				return false, nil
			}
			p.DeletionGracePeriodSeconds = proto.Int64(g)
			return true, nil
		}
		p.DeletionTime = timestamppb.New(s.opts.Now())
		p.DeletionGracePeriodSeconds = proto.Int64(g)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return proto.Clone(out).(*syncpodv1.Pod), nil
}

// Remove deletes the pod with this uid for good (its containers and
// sandboxes are gone). Watchers get DELETED. ErrNotFound when absent.
func (s *Store) Remove(ctx context.Context, uid string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if uid == "" {
		return invalidf("uid: required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var old *plannerv1.PodRecord
	var retried [][2]*plannerv1.PodRecord
	err := s.write(func(tx *bolt.Tx) error {
		var err error
		old, err = lookup(tx, &plannerv1.PodRef{Uid: uid})
		if err != nil {
			return err
		}
		if old == nil {
			return fmt.Errorf("%w: uid %s", ErrNotFound, uid)
		}
		p := old.GetPod()
		if err := tx.Bucket(bucketPods).Delete(podKey(p.GetNamespace(), p.GetName())); err != nil {
			return err
		}
		if err := tx.Bucket(bucketUIDs).Delete([]byte(uid)); err != nil {
			return err
		}
		s.wroteInTx = true
		delete(s.deferred, uid)
		// the room the pod held may let a deferred resize in.
		retried, err = s.retryDeferred(tx)
		return err
	})
	if err != nil {
		return err
	}
	now := s.opts.Now()
	s.hub.publish(old, nil, now)
	s.publishRetried(retried, now)
	return nil
}

// UpdateStatus stores the pod's latest status. A status equal to the
// stored one except for updated_at is not written; changed reports whether
// anything was. ErrNotFound when no pod has this uid.
func (s *Store) UpdateStatus(ctx context.Context, uid string, st *syncpodv1.PodStatus) (changed bool, err error) {
	return s.CommitSync(ctx, uid, SyncCommit{Status: st})
}

// statusEqual reports whether a and b agree on everything but updated_at.
// It compares them in place rather than on copies (a status is compared
// on every sync): a's updated_at is set to b's for the comparison, then
// put back, so a must be the caller's own (a record read in this
// transaction), while b, which others may be reading, is not touched.
func statusEqual(a, b *syncpodv1.PodStatus) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	saved := a.UpdatedAt
	a.UpdatedAt = b.UpdatedAt
	eq := proto.Equal(a, b)
	a.UpdatedAt = saved
	return eq
}

// AppendEvents folds evs into the pod's event list (aggregating repeats,
// bounded, see package events). Events are stamped with the pod's identity.
// ErrNotFound when no pod has this uid.
func (s *Store) AppendEvents(ctx context.Context, uid string, evs []*syncpodv1.Event) error {
	if len(evs) == 0 {
		return nil
	}
	_, err := s.CommitSync(ctx, uid, SyncCommit{Events: evs})
	return err
}

// SetLastActions records the last change set applied to the pod.
// ErrNotFound when no pod has this uid.
func (s *Store) SetLastActions(ctx context.Context, uid string, a *syncpodv1.PodActions) error {
	if a == nil {
		a = &syncpodv1.PodActions{}
	}
	_, err := s.CommitSync(ctx, uid, SyncCommit{LastActions: a})
	return err
}

// SyncCommit is what one pod sync writes: its events, the change set it
// applied and the status it computed. A nil or empty part leaves that part
// of the record as it is.
type SyncCommit struct {
	// Events are folded into the event list as AppendEvents does.
	Events []*syncpodv1.Event
	// LastActions, when set, replaces the last change set.
	LastActions *syncpodv1.PodActions
	// Status, when set, replaces the status unless it equals the stored
	// one except for updated_at.
	Status *syncpodv1.PodStatus
}

// CommitSync writes a sync's events, last actions and status in one
// transaction: one commit (one fsync), and watchers see one MODIFIED
// carrying all of it, or, when the commit fails, nothing. changed reports
// whether anything was written. ErrNotFound when no pod has this uid.
func (s *Store) CommitSync(ctx context.Context, uid string, c SyncCommit) (changed bool, err error) {
	finished := false
	err = s.update(ctx, &plannerv1.PodRef{Uid: uid}, func(rec *plannerv1.PodRecord) (bool, error) {
		if len(c.Events) > 0 {
			p := rec.GetPod()
			stamped := make([]*syncpodv1.Event, len(c.Events))
			for i, e := range c.Events {
				ev := proto.Clone(e).(*syncpodv1.Event)
				ev.PodUid, ev.PodName, ev.PodNamespace = p.GetUid(), p.GetName(), p.GetNamespace()
				stamped[i] = ev
			}
			rec.Events = events.Merge(rec.GetEvents(), stamped, s.opts.MaxEvents)
			changed = true
		}
		if c.LastActions != nil && !proto.Equal(rec.GetLastActions(), c.LastActions) {
			rec.LastActions = proto.Clone(c.LastActions).(*syncpodv1.PodActions)
			changed = true
		}
		if c.Status != nil && !statusEqual(rec.GetStatus(), c.Status) {
			finished = !terminal(rec.GetStatus().GetPhase()) && terminal(c.Status.GetPhase())
			rec.Status = proto.Clone(c.Status).(*syncpodv1.PodStatus)
			changed = true
		}
		if changed && s.failCommit != nil {
			return false, s.failCommit()
		}
		return changed, nil
	})
	if err != nil {
		return false, err
	}
	if finished {
		// a finished pod holds nothing any more.
		if err := s.RetryDeferred(ctx); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// update applies fn to the record named by ref in one transaction; fn
// returns whether it changed the record (only then is it written and
// published).
func (s *Store) update(ctx context.Context, ref *plannerv1.PodRef, fn func(*plannerv1.PodRecord) (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ref, err := normaliseRef(ref)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var old, cur *plannerv1.PodRecord
	var changed bool
	err = s.write(func(tx *bolt.Tx) error {
		var err error
		old, err = lookup(tx, ref)
		if err != nil {
			return err
		}
		if old == nil {
			return notFound(ref)
		}
		cur = proto.Clone(old).(*plannerv1.PodRecord)
		if changed, err = fn(cur); err != nil {
			return err
		}
		if !changed {
			return errRollback
		}
		return s.writeRecord(tx, cur)
	})
	if err != nil && !errors.Is(err, errRollback) {
		return err
	}
	if changed {
		s.hub.publish(old, cur, s.opts.Now())
	}
	return nil
}

// Subscribe starts a watch of the pods passing f: the returned
// subscription first yields one ADDED per existing matching pod (sorted by
// namespace then name), then every committed change. Close it when done.
func (s *Store) Subscribe(ctx context.Context, f Filter) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []*plannerv1.PodRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		recs, err = listTx(tx, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	now := timestamppb.New(s.opts.Now())
	initial := make([]*plannerv1.WatchPodsResponse, len(recs))
	for i, r := range recs {
		initial[i] = &plannerv1.WatchPodsResponse{Type: plannerv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, Record: r, Time: now}
	}
	return s.hub.add(f, s.opts.WatchBuffer, initial), nil
}
