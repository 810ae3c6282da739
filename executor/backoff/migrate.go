package backoff

import (
	"encoding/binary"

	"github.com/syncpod/syncpod/internal/boltfile"
	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the schema version this code writes and reads.
const SchemaVersion = 3

// schema is where the version is kept: meta/schema_version, decimal since
// version 2; the 8-byte big-endian form of version 1 files is still read
// (no 8-byte value of it is all ASCII digits).
var schema = boltfile.Schema{Bucket: bucketMeta, Key: keySchema, Legacy: func(v []byte) (uint64, bool) {
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}}

// migrations are ordered by version, starting at 1, without gaps. Every
// entry needs a case in migrate_test.go.
var migrations = []boltfile.Migration{
	{Version: 1, Name: "create meta and backoff buckets", Apply: func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketMeta); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketBackoff)
		return err
	}},
	// Version 1 stored schema_version as a big-endian uint64; the planner
	// stores its own as decimal ASCII. One encoding for both databases:
	// decimal, readable with `bbolt get`.
	{Version: 2, Name: "store schema_version as decimal ASCII, like the planner's", Apply: apply2},
	{Version: 3, Name: "create the userns bucket", Apply: func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketUserns)
		return err
	}},
}

// apply2 has nothing to do: Migrate records version 2 in decimal.
func apply2(*bolt.Tx) error { return nil }
