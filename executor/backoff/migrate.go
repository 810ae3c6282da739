package backoff

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the schema version this code writes and reads.
const SchemaVersion = 1

// migration brings the database from version-1 to version.
type migration struct {
	version uint64
	name    string
	apply   func(tx *bolt.Tx) error
}

// migrations are ordered by version, starting at 1, without gaps. Every
// entry needs a case in migrate_test.go.
var migrations = []migration{
	{version: 1, name: "create meta and backoff buckets", apply: func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketMeta); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketBackoff)
		return err
	}},
}

// schemaVersion reads the stored version; 0 for a new file.
func schemaVersion(tx *bolt.Tx) uint64 {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return 0
	}
	v := b.Get(keySchema)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// migrate runs, inside tx, every migration newer than the stored version
// and records the new version. A database newer than this code is refused.
func migrate(tx *bolt.Tx, ms []migration) error {
	cur := schemaVersion(tx)
	latest := uint64(0)
	if len(ms) > 0 {
		latest = ms[len(ms)-1].version
	}
	if cur > latest {
		return fmt.Errorf("database schema version %d is newer than this executor's %d", cur, latest)
	}
	for i, m := range ms {
		if m.version != uint64(i+1) {
			return fmt.Errorf("migration %q has version %d, want %d", m.name, m.version, i+1)
		}
		if m.version <= cur {
			continue
		}
		if err := m.apply(tx); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], m.version)
		if err := b.Put(keySchema, v[:]); err != nil {
			return err
		}
	}
	return nil
}
