package backoff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/syncpod/syncpod/internal/boltfile"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/internal/periodic"
)

// Defaults and limits of the back-off curve (rule, docs/design.md).
const (
	// DefaultInitial is the kubelet's initial crash-loop delay.
	DefaultInitial = 10 * time.Second
	// DefaultMax is the kubelet's maximum crash-loop delay.
	DefaultMax = 300 * time.Second
	// ReducedInitial is the initial delay of the reduced curve (KEP-4603).
	ReducedInitial = 1 * time.Second
	// ReducedMax is the maximum delay of the reduced curve (KEP-4603).
	ReducedMax = 60 * time.Second
	// MinMax and MaxMax bound the configurable maximum (KEP-5593).
	MinMax = 1 * time.Second
	// MaxMax is the largest allowed maximum delay.
	MaxMax = 300 * time.Second
	// ResetAfter is how long after an entry's last update an exit (or GC)
	// finds it expired: fixed by the kubelet at ten minutes,
	// whatever the maximum delay (client-go's default, twice the maximum,
	// is the same only for the default 300 s).
	ResetAfter = 600 * time.Second
	// DefaultGCInterval is how often Run garbage-collects.
	DefaultGCInterval = 30 * time.Second
	// DefaultOpenTimeout bounds waiting for the database file lock.
	DefaultOpenTimeout = 5 * time.Second
)

// ErrStore wraps every database failure.
var ErrStore = errors.New("backoff store")

// ErrCorrupt is returned by Open for a damaged database file (truncated,
// emptied, inconsistent pages); the message names the file and what to do.
// It is boltfile.ErrCorrupt, so errors.Is matches either name.
var ErrCorrupt = boltfile.ErrCorrupt

// ErrLocked is returned by Open when another process (or another Store in
// this one) holds the database file. It is boltfile.ErrLocked.
var ErrLocked = boltfile.ErrLocked

// ErrInvalidConfig is returned by Open for a bad Config; its class is
// InvalidArgument.
var ErrInvalidConfig = errgrpc.New(errgrpc.ErrInvalidArgument, "invalid back-off config")

// Clock tells the time; tests inject a fake.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// WallClock is the real clock.
func WallClock() Clock { return wallClock{} }

// Key identifies one back-off entry.
type Key struct {
	// PodUID of the pod.
	PodUID string
	// ContainerName in the pod spec.
	ContainerName string
	// SpecHash of the container spec the instance was created from.
	SpecHash string
}

// PodRef names the pod an entry belongs to, for humans.
type PodRef struct {
	// Name of the pod.
	Name string
	// Namespace of the pod.
	Namespace string
}

// Entry is one stored back-off entry.
type Entry struct {
	Key
	PodRef
	// Delay is the current back-off delay.
	Delay time.Duration
	// LastUpdate is when Delay last changed (clock time of Next).
	LastUpdate time.Time
	// HeldUntil is set by a Check that held a start back: the exit time
	// plus Delay, when that start may run. Next clears it (the start ran).
	HeldUntil time.Time
}

// Config configures a Store.
type Config struct {
	// Initial delay; 0 means DefaultInitial. Lowered to Max when above it.
	Initial time.Duration
	// Max delay, 1 s to 300 s; 0 means DefaultMax.
	Max time.Duration
	// Clock; nil means the wall clock.
	Clock Clock
	// OpenTimeout bounds waiting for the file lock; 0 means the default.
	OpenTimeout time.Duration
	// GCInterval is Run's period; 0 means DefaultGCInterval.
	GCInterval time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// Normalize applies defaults and the rules of R-11.1 (max within 1 s–300 s,
// initial lowered to max), returning an error for values out of range.
func (c Config) Normalize() (Config, error) {
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	if c.Initial == 0 {
		c.Initial = DefaultInitial
	}
	var errs []error
	if c.Max < MinMax || c.Max > MaxMax {
		errs = append(errs, fmt.Errorf("%w: max %s must be within %s..%s", ErrInvalidConfig, c.Max, MinMax, MaxMax))
	}
	if c.Initial < 0 {
		errs = append(errs, fmt.Errorf("%w: initial %s must be positive", ErrInvalidConfig, c.Initial))
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if c.Initial > c.Max {
		c.Initial = c.Max
	}
	if c.Clock == nil {
		c.Clock = WallClock()
	}
	if c.OpenTimeout == 0 {
		c.OpenTimeout = DefaultOpenTimeout
	}
	if c.GCInterval == 0 {
		c.GCInterval = DefaultGCInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Store is the bbolt-backed back-off store. Safe for concurrent use.
type Store struct {
	db  *bolt.DB
	cfg Config
}

var (
	bucketMeta    = []byte("meta")
	bucketBackoff = []byte("backoff")
	keySchema     = []byte("schema_version")
)

// What to do about a damaged file, said in every ErrCorrupt message
// ({path} is the file's path).
const corruptAdvice = "stop the executor and move the file aside (mv {path} {path}.corrupt) or restore it from a backup; " +
	"starting without it only forgets the crash-loop back-off delays: a crashing container restarts right away once, then backs off again from the initial delay"

// Open opens (creating if needed, mode 0600) the database at path, runs
// pending migrations and a first GC.
func Open(path string, cfg Config) (*Store, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return nil, err
	}
	fo := boltfile.Options{Timeout: cfg.OpenTimeout, Service: "executor", CorruptAdvice: corruptAdvice}
	db, err := boltfile.OpenMigrated(path, fo, func(tx *bolt.Tx) error { return schema.Migrate(tx, migrations) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	s := &Store{db: db, cfg: cfg}
	// The first GC reads every entry: a record that does not decode is
	// found here, not in the middle of a request.
	if err := boltfile.Guard(func() error { _, err := s.GC(); return err }); err != nil {
		_ = db.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: %w", ErrStore, fo.FileError(path, "cannot write", err))
		}
		return nil, fmt.Errorf("%w: %w", ErrStore, fo.Corrupt(path, err))
	}
	return s, nil
}

// Config returns the effective configuration.
func (s *Store) Config() Config { return s.cfg }

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("%w: close: %w", ErrStore, err)
	}
	return nil
}

// Run garbage-collects every GCInterval until ctx ends; it returns nil on
// cancellation.
func (s *Store) Run(ctx context.Context) error {
	periodic.Run(ctx, s.cfg.GCInterval, func() {
		if n, err := s.GC(); err != nil {
			s.cfg.Logger.Warn("back-off gc failed", "err", err)
		} else if n > 0 {
			s.cfg.Logger.Debug("back-off gc", "removed", n)
		}
	})
	return nil
}

func (s *Store) expired(at, lastUpdate time.Time) bool {
	return at.Sub(lastUpdate) > ResetAfter
}

// CheckResult is the answer of Check.
type CheckResult struct {
	// InBackOff is true when the start must be skipped.
	InBackOff bool
	// Delay is the current delay of the entry (0 when unknown or expired).
	Delay time.Duration
	// Until is exitedAt + Delay when InBackOff.
	Until time.Time
}

// Check reports whether key is in back-off since exitedAt (the newest
// exit's finish time; ). An unknown or expired key is in back-off
// for the first delay: the first exit already waits. When the
// start is held, Check records (committed) until when, so ListBackoffs
// and the gauges can tell; pod names the pod of an entry it makes. A check
// that has nothing to record (a delay that has passed, a hold already
// recorded) only reads: a bbolt write transaction commits (and fsyncs)
// even when it wrote nothing, and Check is on the path of every restart,
// before its StartContainer.
func (s *Store) Check(key Key, pod PodRef, exitedAt time.Time) (CheckResult, error) {
	now := s.cfg.Clock.Now()
	var (
		res   CheckResult
		write bool
	)
	decide := func(tx *bolt.Tx) (Entry, error) {
		res, write = CheckResult{}, false
		e, ok, err := get(tx, key)
		if err != nil {
			return e, err
		}
		if !ok || s.expired(exitedAt, e.LastUpdate) {
			// The first exit of a crash loop: it is held for the
			// first delay too, which the entry records from now on, so
			// the restart after it advances to the second.
			e = Entry{Key: key, PodRef: pod, Delay: s.cfg.Initial, LastUpdate: now}
			if now.Sub(exitedAt) >= e.Delay {
				return e, nil
			}
		}
		res.Delay = e.Delay
		if now.Sub(exitedAt) >= e.Delay {
			return e, nil
		}
		res.InBackOff = true
		res.Until = exitedAt.Add(e.Delay)
		write = !e.HeldUntil.Equal(res.Until)
		return e, nil
	}
	if err := s.view(func(tx *bolt.Tx) error { _, err := decide(tx); return err }); err != nil || !write {
		return res, err
	}
	// Decided again inside the write: a Next may have committed meanwhile.
	err := s.update(func(tx *bolt.Tx) error {
		e, err := decide(tx)
		if err != nil || !write {
			return err
		}
		e.HeldUntil = res.Until
		return put(tx, e)
	})
	return res, err
}

// Next advances key's delay and commits it before returning the
// new delay.
func (s *Store) Next(key Key, pod PodRef, exitedAt time.Time) (time.Duration, error) {
	now := s.cfg.Clock.Now()
	var delay time.Duration
	err := s.update(func(tx *bolt.Tx) error {
		e, ok, err := get(tx, key)
		if err != nil {
			return err
		}
		if !ok || s.expired(exitedAt, e.LastUpdate) {
			e = Entry{Key: key, Delay: s.cfg.Initial}
		} else {
			e.Delay = min(2*e.Delay, s.cfg.Max)
		}
		e.PodRef = pod
		e.LastUpdate = now
		e.HeldUntil = time.Time{}
		delay = e.Delay
		return put(tx, e)
	})
	return delay, err
}

// Get returns the entry for key, if any (expired ones included until GC).
func (s *Store) Get(key Key) (Entry, bool, error) {
	var (
		e  Entry
		ok bool
	)
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		e, ok, err = get(tx, key)
		return err
	})
	return e, ok, err
}

// List returns the entries of one pod (all pods when podUID is empty),
// sorted by pod uid, container name, spec hash.
func (s *Store) List(podUID string) ([]Entry, error) {
	var out []Entry
	err := s.view(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketBackoff)
		return root.ForEachBucket(func(uid []byte) error {
			if podUID != "" && string(uid) != podUID {
				return nil
			}
			return root.Bucket(uid).ForEach(func(k, v []byte) error {
				e, err := decode(string(uid), k, v)
				if err != nil {
					return err
				}
				out = append(out, e)
				return nil
			})
		})
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		if a.PodUID != b.PodUID {
			return a.PodUID < b.PodUID
		}
		if a.ContainerName != b.ContainerName {
			return a.ContainerName < b.ContainerName
		}
		return a.SpecHash < b.SpecHash
	})
	return out, err
}

// Reset deletes the entries of a pod's container (every container when
// containerName is empty) and returns how many were removed.
func (s *Store) Reset(podUID, containerName string) (int, error) {
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketBackoff)
		b := root.Bucket([]byte(podUID))
		if b == nil {
			return errUnchanged
		}
		var del [][]byte
		err := b.ForEach(func(k, _ []byte) error {
			name, _, _ := bytes.Cut(k, []byte{0})
			if containerName == "" || string(name) == containerName {
				del = append(del, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(del) == 0 {
			return errUnchanged
		}
		for _, k := range del {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(del)
		return dropEmpty(root, []byte(podUID))
	})
	return n, err
}

// GC removes every entry expired relative to now and returns the count.
func (s *Store) GC() (int, error) {
	now := s.cfg.Clock.Now()
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketBackoff)
		var uids [][]byte
		if err := root.ForEachBucket(func(uid []byte) error {
			uids = append(uids, bytes.Clone(uid))
			return nil
		}); err != nil {
			return err
		}
		for _, uid := range uids {
			b := root.Bucket(uid)
			var del [][]byte
			if err := b.ForEach(func(k, v []byte) error {
				e, err := decode(string(uid), k, v)
				if err != nil {
					return err
				}
				if s.expired(now, e.LastUpdate) {
					del = append(del, bytes.Clone(k))
				}
				return nil
			}); err != nil {
				return err
			}
			for _, k := range del {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			n += len(del)
			if err := dropEmpty(root, uid); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// Stats counts stored entries and those currently in back-off (now before
// HeldUntil), for the gauges.
func (s *Store) Stats() (entries, inBackOff int, err error) {
	now := s.cfg.Clock.Now()
	all, err := s.List("")
	if err != nil {
		return 0, 0, err
	}
	for _, e := range all {
		if now.Before(e.HeldUntil) {
			inBackOff++
		}
	}
	return len(all), inBackOff, nil
}

// errUnchanged, returned by an update's fn that changed nothing, rolls the
// transaction back: nothing to commit, no fsync.
var errUnchanged = errors.New("nothing changed")

func (s *Store) update(fn func(*bolt.Tx) error) error {
	if err := s.db.Update(fn); err != nil && !errors.Is(err, errUnchanged) {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

func (s *Store) view(fn func(*bolt.Tx) error) error {
	if err := s.db.View(fn); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

func dropEmpty(root *bolt.Bucket, uid []byte) error {
	b := root.Bucket(uid)
	if b == nil {
		return nil
	}
	if k, _ := b.Cursor().First(); k == nil {
		return root.DeleteBucket(uid)
	}
	return nil
}

type record struct {
	DelayNS      int64  `json:"delay_ns"`
	LastUpdateNS int64  `json:"last_update_ns"`
	HeldUntilNS  int64  `json:"held_until_ns,omitempty"`
	PodName      string `json:"pod_name,omitempty"`
	PodNamespace string `json:"pod_namespace,omitempty"`
}

func entryKey(k Key) []byte { return []byte(k.ContainerName + "\x00" + k.SpecHash) }

func get(tx *bolt.Tx, key Key) (Entry, bool, error) {
	b := tx.Bucket(bucketBackoff).Bucket([]byte(key.PodUID))
	if b == nil {
		return Entry{}, false, nil
	}
	k := entryKey(key)
	v := b.Get(k)
	if v == nil {
		return Entry{}, false, nil
	}
	e, err := decode(key.PodUID, k, v)
	return e, err == nil, err
}

func put(tx *bolt.Tx, e Entry) error {
	if strings.ContainsRune(e.ContainerName, 0) || e.PodUID == "" {
		return fmt.Errorf("bad key %+v", e.Key)
	}
	b, err := tx.Bucket(bucketBackoff).CreateBucketIfNotExists([]byte(e.PodUID))
	if err != nil {
		return err
	}
	var held int64
	if !e.HeldUntil.IsZero() {
		held = e.HeldUntil.UnixNano()
	}
	v, err := json.Marshal(record{
		DelayNS:      int64(e.Delay),
		LastUpdateNS: e.LastUpdate.UnixNano(),
		HeldUntilNS:  held,
		PodName:      e.Name,
		PodNamespace: e.Namespace,
	})
	if err != nil {
		return err
	}
	return b.Put(entryKey(e.Key), v)
}

func decode(uid string, k, v []byte) (Entry, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return Entry{}, fmt.Errorf("entry %s/%q: %w", uid, k, err)
	}
	name, hash, _ := bytes.Cut(k, []byte{0})
	e := Entry{
		Key:        Key{PodUID: uid, ContainerName: string(name), SpecHash: string(hash)},
		PodRef:     PodRef{Name: r.PodName, Namespace: r.PodNamespace},
		Delay:      time.Duration(r.DelayNS),
		LastUpdate: time.Unix(0, r.LastUpdateNS),
	}
	if r.HeldUntilNS != 0 {
		e.HeldUntil = time.Unix(0, r.HeldUntilNS)
	}
	return e, nil
}
