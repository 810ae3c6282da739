package backoff

import (
	"encoding/binary"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the schema version this code writes and reads.
const SchemaVersion = 2

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
	// Version 1 stored schema_version as a big-endian uint64; the planner
	// stores its own as decimal ASCII. One encoding for both databases:
	// decimal, readable with `bbolt get`.
	{version: 2, name: "store schema_version as decimal ASCII, like the planner's", apply: func(tx *bolt.Tx) error {
		return putSchemaVersion(tx, 2)
	}},
}

// schemaVersion reads the stored version; 0 for a new file. Decimal ASCII
// since version 2; the 8-byte big-endian form of version 1 files is still
// read (no 8-byte value of it is all ASCII digits).
func schemaVersion(tx *bolt.Tx) (uint64, error) {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return 0, nil
	}
	v := b.Get(keySchema)
	if v == nil {
		return 0, nil
	}
	if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return n, nil
	}
	if len(v) == 8 {
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("%w: meta/schema_version %q is not a version", ErrCorrupt, v)
}

func putSchemaVersion(tx *bolt.Tx, v uint64) error {
	b, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	return b.Put(keySchema, []byte(strconv.FormatUint(v, 10)))
}

// migrate runs, inside tx, every migration newer than the stored version
// and records the new version. A database newer than this code is refused.
func migrate(tx *bolt.Tx, ms []migration) error {
	cur, err := schemaVersion(tx)
	if err != nil {
		return err
	}
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
		if err := putSchemaVersion(tx, m.version); err != nil {
			return err
		}
	}
	return nil
}
