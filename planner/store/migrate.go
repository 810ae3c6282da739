package store

import (
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketMeta = []byte("meta")
	bucketPods = []byte("pods")
	bucketUIDs = []byte("uids")
	keySchema  = []byte("schema_version")
)

// migration moves the database from version-1 to version.
type migration struct {
	version int
	name    string
	apply   func(tx *bolt.Tx) error
}

// migrations returns every migration in order. Append only; each one needs
// a case in TestMigrations (a test fails otherwise).
func migrations() []migration {
	return []migration{
		{version: 1, name: "create meta, pods and uids buckets", apply: func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketMeta, bucketPods, bucketUIDs} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return fmt.Errorf("create bucket %s: %w", b, err)
				}
			}
			return nil
		}},
	}
}

// SchemaVersion is the schema version this code writes.
func SchemaVersion() int {
	m := migrations()
	return m[len(m)-1].version
}

// readSchemaVersion returns the stored version, 0 for a fresh file.
func readSchemaVersion(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil
	}
	raw := meta.Get(keySchema)
	if raw == nil {
		return 0, nil
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil {
		return 0, fmt.Errorf("%w: meta/schema_version %q is not a version: %w", ErrCorrupt, raw, err)
	}
	return v, nil
}

// migrate runs, in tx, every migration above the stored version and
// records the new version.
func migrate(tx *bolt.Tx, list []migration) error {
	cur, err := readSchemaVersion(tx)
	if err != nil {
		return err
	}
	latest := list[len(list)-1].version
	if cur > latest {
		return fmt.Errorf("%w: file has version %d, this planner knows up to %d", ErrSchemaTooNew, cur, latest)
	}
	for _, m := range list {
		if m.version <= cur {
			continue
		}
		if err := m.apply(tx); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	return meta.Put(keySchema, []byte(strconv.Itoa(latest)))
}
