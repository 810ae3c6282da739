package store

import (
	"fmt"

	"github.com/syncpod/syncpod/internal/boltfile"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketMeta = []byte("meta")
	bucketPods = []byte("pods")
	bucketUIDs = []byte("uids")
	keySchema  = []byte("schema_version")
)

// schema is where the version is kept: meta/schema_version, decimal ASCII,
// the encoding every syncpod database shares (internal/boltfile).
var schema = boltfile.Schema{Bucket: bucketMeta, Key: keySchema}

// migrations returns every migration in order, numbered from 1 without
// gaps. Append only; each one needs a case in TestMigrations (a test
// fails otherwise).
func migrations() []boltfile.Migration {
	return []boltfile.Migration{
		{Version: 1, Name: "create meta, pods and uids buckets", Apply: func(tx *bolt.Tx) error {
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
	return int(m[len(m)-1].Version)
}

// readSchemaVersion returns the stored version, 0 for a fresh file; a
// value that is no version wraps ErrCorrupt.
func readSchemaVersion(tx *bolt.Tx) (int, error) {
	v, err := schema.Version(tx)
	return int(v), err
}

// migrate runs, in tx, every migration of list above the stored version,
// recording each version as it is reached; a file newer than list is
// ErrSchemaTooNew.
func migrate(tx *bolt.Tx, list []boltfile.Migration) error {
	return schema.Migrate(tx, list)
}
