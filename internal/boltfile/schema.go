package boltfile

import (
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// ErrSchemaTooNew: the file holds a schema version newer than the
// program's last migration (it was written by a newer release).
var ErrSchemaTooNew = errors.New("database schema is newer than this program")

// Migration moves a database from schema Version-1 to Version.
type Migration struct {
	// Version is the schema version the migration leads to, from 1.
	Version uint64
	// Name says what it does, for errors.
	Name string
	// Apply runs inside the migrating transaction.
	Apply func(tx *bolt.Tx) error
}

// Schema is where a database records its schema version: under Key in
// the top-level bucket Bucket, as decimal ASCII (readable with
// `bbolt get`), the one encoding of every syncpod database.
type Schema struct {
	Bucket, Key []byte
	// Legacy, when set, reads a stored value that is not decimal: an
	// encoding older releases wrote. ok false: not a version either.
	Legacy func(v []byte) (version uint64, ok bool)
}

// Version returns the stored version, 0 for a file with none. A value
// that is no version is an error wrapping ErrCorrupt.
func (s Schema) Version(tx *bolt.Tx) (uint64, error) {
	b := tx.Bucket(s.Bucket)
	if b == nil {
		return 0, nil
	}
	v := b.Get(s.Key)
	if v == nil {
		return 0, nil
	}
	if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return n, nil
	}
	if s.Legacy != nil {
		if n, ok := s.Legacy(v); ok {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: %s/%s %q is not a version", ErrCorrupt, s.Bucket, s.Key, v)
}

// Put records v as the stored version, creating the bucket if needed.
func (s Schema) Put(tx *bolt.Tx, v uint64) error {
	b, err := tx.CreateBucketIfNotExists(s.Bucket)
	if err != nil {
		return err
	}
	return b.Put(s.Key, []byte(strconv.FormatUint(v, 10)))
}

// Migrate runs, inside tx, every migration of ms newer than the stored
// version, in order, recording each version as it is reached; so a
// failure rolls the whole transaction back and the file is untouched. ms
// must be numbered 1, 2, ... without gaps. A file newer than the last
// migration is refused with ErrSchemaTooNew.
func (s Schema) Migrate(tx *bolt.Tx, ms []Migration) error {
	cur, err := s.Version(tx)
	if err != nil {
		return err
	}
	latest := uint64(0)
	if len(ms) > 0 {
		latest = ms[len(ms)-1].Version
	}
	if cur > latest {
		return fmt.Errorf("%w: the file has version %d, this program knows up to %d", ErrSchemaTooNew, cur, latest)
	}
	for i, m := range ms {
		if m.Version != uint64(i+1) {
			return fmt.Errorf("migration %q has version %d, want %d", m.Name, m.Version, i+1)
		}
		if m.Version <= cur {
			continue
		}
		if err := m.Apply(tx); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
		}
		if err := s.Put(tx, m.Version); err != nil {
			return err
		}
	}
	return nil
}
