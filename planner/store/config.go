package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/internal/errgrpc"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// ConfigMaps and Secrets live beside the pods, in buckets created on the
// first write (so they need no schema migration; a reader treats a missing
// bucket as empty):
//
//	configmaps/
//	    <namespace>/<name> -> ConfigMap (binary protobuf, syncpod.v1)
//	secrets/
//	    <namespace>/<name> -> Secret (binary protobuf, syncpod.v1)
//
// The database file is mode 0600, so Secret values on disk are readable by
// the planner's user only. Nothing here logs a value.
var (
	bucketConfigMaps = []byte("configmaps")
	bucketSecrets    = []byte("secrets")
)

// ErrImmutable: an immutable ConfigMap or Secret would change
// (FailedPrecondition).
var ErrImmutable = errgrpc.New(errgrpc.ErrFailedPrecondition, "object is immutable")

// ErrConfigNotFound: no ConfigMap or Secret has that name (NotFound).
var ErrConfigNotFound = errgrpc.New(errgrpc.ErrNotFound, "not found")

func kindOf(bucket []byte) string {
	if bytes.Equal(bucket, bucketSecrets) {
		return "secret"
	}
	return "configmap"
}

// configObject is what ConfigMap and Secret share for storage.
type configObject interface {
	proto.Message
	GetName() string
	GetNamespace() string
	GetUid() string
	GetImmutable() bool
}

// ConfigChanged is signalled after every committed change of a ConfigMap
// or Secret. It holds at most one pending signal: changes that happen
// before the reader wakes are coalesced into that one (the reader rereads
// what it needs), never lost.
func (s *Store) ConfigChanged() <-chan struct{} { return s.configSignal() }

func (s *Store) configSignal() chan struct{} {
	s.cfgOnce.Do(func() { s.cfgCh = make(chan struct{}, 1) })
	return s.cfgCh
}

func (s *Store) notifyConfig() {
	select {
	case s.configSignal() <- struct{}{}:
	default: // one is pending already: it covers this change
	}
}

// applyConfig stores obj (namespace defaulted) in bucket: CREATED with a
// uid, generation 1 and creation_time; UPDATED with generation+1;
// UNCHANGED when equal to the stored one apart from planner-set fields.
// set writes the planner-owned fields into obj.
func (s *Store) applyConfig(ctx context.Context, bucket []byte, obj configObject, set func(uid string, gen int64, created *timestamppb.Timestamp), strip func(configObject) configObject) (configObject, plannerv1.ApplyResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := podKey(obj.GetNamespace(), obj.GetName())
	var result plannerv1.ApplyResult
	var stored configObject
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		if raw := b.Get(key); raw != nil {
			old := proto.Clone(obj)
			proto.Reset(old)
			if err := proto.Unmarshal(raw, old); err != nil {
				return fmt.Errorf("decode %s %s: %w", bucket, key, err)
			}
			cur := old.(configObject)
			if proto.Equal(strip(cur), strip(obj)) {
				result, stored = plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED, cur
				return errRollback
			}
			if cur.GetImmutable() {
				return fmt.Errorf("%w: %s/%s is immutable; delete and re-create it to change it", ErrImmutable, obj.GetNamespace(), obj.GetName())
			}
			if obj.GetUid() != "" && obj.GetUid() != cur.GetUid() {
				return fmt.Errorf("%w: %s/%s has uid %s, not %s (delete it first)", ErrUIDMismatch, obj.GetNamespace(), obj.GetName(), cur.GetUid(), obj.GetUid())
			}
			gen, created := generationOf(cur)
			set(cur.GetUid(), gen+1, created)
			result = plannerv1.ApplyResult_APPLY_RESULT_UPDATED
		} else {
			uid := obj.GetUid()
			if uid == "" {
				if uid, err = s.opts.NewUID(); err != nil {
					return err
				}
			}
			set(uid, 1, timestamppb.New(s.opts.Now()))
			result = plannerv1.ApplyResult_APPLY_RESULT_CREATED
		}
		raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(obj)
		if err != nil {
			return err
		}
		stored = obj
		return b.Put(key, raw)
	})
	if err != nil && !errors.Is(err, errRollback) {
		return nil, 0, err
	}
	if result != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
		s.notifyConfig()
	}
	return stored, result, nil
}

func generationOf(o configObject) (int64, *timestamppb.Timestamp) {
	switch x := o.(type) {
	case *syncpodv1.ConfigMap:
		return x.GetGeneration(), x.GetCreationTime()
	case *syncpodv1.Secret:
		return x.GetGeneration(), x.GetCreationTime()
	}
	return 0, nil
}

func normaliseConfigMeta(name, ns *string) error {
	if *ns == "" {
		*ns = validation.DefaultNamespace
	}
	if strings.Contains(*name, "/") || strings.Contains(*ns, "/") {
		return invalidf("name and namespace must not contain '/'")
	}
	return nil
}

// ApplyConfigMap creates or updates a ConfigMap (the input is not
// modified). Errors: ErrInvalid (nothing stored), ErrImmutable,
// ErrUIDMismatch.
func (s *Store) ApplyConfigMap(ctx context.Context, in *syncpodv1.ConfigMap) (*syncpodv1.ConfigMap, plannerv1.ApplyResult, error) {
	if in == nil {
		return nil, 0, invalidf("config_map: required")
	}
	c := proto.Clone(in).(*syncpodv1.ConfigMap)
	c.Generation, c.CreationTime = 0, nil
	if err := normaliseConfigMeta(&c.Name, &c.Namespace); err != nil {
		return nil, 0, err
	}
	if err := validation.ConfigMap(c); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	strip := func(o configObject) configObject {
		x := proto.Clone(o).(*syncpodv1.ConfigMap)
		x.Uid, x.Generation, x.CreationTime = "", 0, nil
		return x
	}
	out, res, err := s.applyConfig(ctx, bucketConfigMaps, c, func(uid string, gen int64, created *timestamppb.Timestamp) {
		c.Uid, c.Generation, c.CreationTime = uid, gen, created
	}, strip)
	if err != nil {
		return nil, 0, err
	}
	return proto.Clone(out).(*syncpodv1.ConfigMap), res, nil
}

// ApplySecret creates or updates a Secret, as ApplyConfigMap. The Secret
// returned carries its values (callers redact with Redacted).
func (s *Store) ApplySecret(ctx context.Context, in *syncpodv1.Secret) (*syncpodv1.Secret, plannerv1.ApplyResult, error) {
	if in == nil {
		return nil, 0, invalidf("secret: required")
	}
	x := proto.Clone(in).(*syncpodv1.Secret)
	x.Generation, x.CreationTime, x.DataSizes = 0, nil, nil
	if x.Type == "" {
		x.Type = "Opaque"
	}
	if err := normaliseConfigMeta(&x.Name, &x.Namespace); err != nil {
		return nil, 0, err
	}
	if err := validation.Secret(x); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	strip := func(o configObject) configObject {
		y := proto.Clone(o).(*syncpodv1.Secret)
		y.Uid, y.Generation, y.CreationTime = "", 0, nil
		return y
	}
	out, res, err := s.applyConfig(ctx, bucketSecrets, x, func(uid string, gen int64, created *timestamppb.Timestamp) {
		x.Uid, x.Generation, x.CreationTime = uid, gen, created
	}, strip)
	if err != nil {
		return nil, 0, err
	}
	return proto.Clone(out).(*syncpodv1.Secret), res, nil
}

// Redacted returns a copy of s with its values replaced by their sizes.
func Redacted(s *syncpodv1.Secret) *syncpodv1.Secret {
	out := proto.Clone(s).(*syncpodv1.Secret)
	out.DataSizes = make(map[string]int64, len(out.Data))
	for k, v := range out.Data {
		out.DataSizes[k] = int64(len(v))
	}
	out.Data = nil
	return out
}

func (s *Store) getConfig(ctx context.Context, bucket []byte, ns, name string, into proto.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ns == "" {
		ns = validation.DefaultNamespace
	}
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		var raw []byte
		if b != nil {
			raw = b.Get(podKey(ns, name))
		}
		if raw == nil {
			return fmt.Errorf("%s %s/%s: %w", kindOf(bucket), ns, name, ErrConfigNotFound)
		}
		return proto.Unmarshal(raw, into)
	})
}

// GetConfigMap returns one ConfigMap; ErrNotFound when missing.
func (s *Store) GetConfigMap(ctx context.Context, ns, name string) (*syncpodv1.ConfigMap, error) {
	c := &syncpodv1.ConfigMap{}
	if err := s.getConfig(ctx, bucketConfigMaps, ns, name, c); err != nil {
		return nil, err
	}
	return c, nil
}

// GetSecret returns one Secret with its values; ErrNotFound when missing.
func (s *Store) GetSecret(ctx context.Context, ns, name string) (*syncpodv1.Secret, error) {
	x := &syncpodv1.Secret{}
	if err := s.getConfig(ctx, bucketSecrets, ns, name, x); err != nil {
		return nil, err
	}
	return x, nil
}

func (s *Store) listConfig(ctx context.Context, bucket []byte, ns string, each func(raw []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	prefix := []byte{}
	if ns != "" {
		prefix = []byte(ns + "/")
	}
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := each(v); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListConfigMaps returns the ConfigMaps of ns (every namespace when
// empty), sorted by namespace then name.
func (s *Store) ListConfigMaps(ctx context.Context, ns string) ([]*syncpodv1.ConfigMap, error) {
	var out []*syncpodv1.ConfigMap
	err := s.listConfig(ctx, bucketConfigMaps, ns, func(raw []byte) error {
		c := &syncpodv1.ConfigMap{}
		if err := proto.Unmarshal(raw, c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// ListSecrets returns the Secrets of ns with their values (callers
// redact), sorted by namespace then name.
func (s *Store) ListSecrets(ctx context.Context, ns string) ([]*syncpodv1.Secret, error) {
	var out []*syncpodv1.Secret
	err := s.listConfig(ctx, bucketSecrets, ns, func(raw []byte) error {
		x := &syncpodv1.Secret{}
		if err := proto.Unmarshal(raw, x); err != nil {
			return err
		}
		out = append(out, x)
		return nil
	})
	return out, err
}

func (s *Store) deleteConfig(ctx context.Context, bucket []byte, ns, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ns == "" {
		ns = validation.DefaultNamespace
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil || b.Get(podKey(ns, name)) == nil {
			return fmt.Errorf("%s %s/%s: %w", kindOf(bucket), ns, name, ErrConfigNotFound)
		}
		return b.Delete(podKey(ns, name))
	})
	if err == nil {
		s.notifyConfig()
	}
	return err
}

// DeleteConfigMap removes a ConfigMap; ErrNotFound when missing.
func (s *Store) DeleteConfigMap(ctx context.Context, ns, name string) error {
	return s.deleteConfig(ctx, bucketConfigMaps, ns, name)
}

// DeleteSecret removes a Secret; ErrNotFound when missing.
func (s *Store) DeleteSecret(ctx context.Context, ns, name string) error {
	return s.deleteConfig(ctx, bucketSecrets, ns, name)
}

// ConfigFor returns the ConfigMaps and Secrets of ns named in the lists
// that exist (missing ones are left out: the executor reports them), read
// in one transaction so a pod sees one consistent set.
func (s *Store) ConfigFor(ctx context.Context, ns string, configMaps, secrets []string) ([]*syncpodv1.ConfigMap, []*syncpodv1.Secret, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if ns == "" {
		ns = validation.DefaultNamespace
	}
	var cms []*syncpodv1.ConfigMap
	var secs []*syncpodv1.Secret
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketConfigMaps); b != nil {
			for _, n := range dedupe(configMaps) {
				if raw := b.Get(podKey(ns, n)); raw != nil {
					c := &syncpodv1.ConfigMap{}
					if err := proto.Unmarshal(raw, c); err != nil {
						return err
					}
					cms = append(cms, c)
				}
			}
		}
		if b := tx.Bucket(bucketSecrets); b != nil {
			for _, n := range dedupe(secrets) {
				if raw := b.Get(podKey(ns, n)); raw != nil {
					x := &syncpodv1.Secret{}
					if err := proto.Unmarshal(raw, x); err != nil {
						return err
					}
					secs = append(secs, x)
				}
			}
		}
		return nil
	})
	return cms, secs, err
}

func dedupe(names []string) []string {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for _, n := range sortedNames(set) {
		out = append(out, n)
	}
	return out
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
