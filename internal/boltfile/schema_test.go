package boltfile

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

var testSchema = Schema{Bucket: []byte("meta"), Key: []byte("schema_version")}

func testDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestMigrateRunsPendingInOrder: a fresh file runs every migration and
// records the last version in decimal; a second run applies nothing; a
// failing migration leaves the version where it was.
func TestMigrateRunsPendingInOrder(t *testing.T) {
	db := testDB(t)
	var ran []uint64
	step := func(v uint64) Migration {
		return Migration{Version: v, Name: "step", Apply: func(*bolt.Tx) error { ran = append(ran, v); return nil }}
	}
	ms := []Migration{step(1), step(2)}
	for range 2 {
		if err := db.Update(func(tx *bolt.Tx) error { return testSchema.Migrate(tx, ms) }); err != nil {
			t.Fatal(err)
		}
	}
	if len(ran) != 2 || ran[0] != 1 || ran[1] != 2 {
		t.Errorf("ran %v, want [1 2] once", ran)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		if got := string(tx.Bucket(testSchema.Bucket).Get(testSchema.Key)); got != "2" {
			t.Errorf("stored %q, want decimal 2", got)
		}
		return nil
	})
	boom := errors.New("boom")
	bad := append(ms, Migration{Version: 3, Name: "fails", Apply: func(*bolt.Tx) error { return boom }})
	if err := db.Update(func(tx *bolt.Tx) error { return testSchema.Migrate(tx, bad) }); !errors.Is(err, boom) {
		t.Fatalf("failing migration: %v", err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		if v, err := testSchema.Version(tx); err != nil || v != 2 {
			t.Errorf("after a failed migration: version %d (%v), want 2", v, err)
		}
		return nil
	})
}

// TestSchemaVersionRefusals: a newer file is ErrSchemaTooNew, a value
// that is no version ErrCorrupt unless Legacy reads it, and migrations
// with a gap are refused.
func TestSchemaVersionRefusals(t *testing.T) {
	db := testDB(t)
	put := func(v []byte) {
		if err := db.Update(func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucketIfNotExists(testSchema.Bucket)
			return b.Put(testSchema.Key, v)
		}); err != nil {
			t.Fatal(err)
		}
	}
	one := []Migration{{Version: 1, Name: "one", Apply: func(*bolt.Tx) error { return nil }}}
	put([]byte("7"))
	if err := db.Update(func(tx *bolt.Tx) error { return testSchema.Migrate(tx, one) }); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("newer file: %v, want ErrSchemaTooNew", err)
	}
	legacy := binary.BigEndian.AppendUint64(nil, 1)
	put(legacy)
	_ = db.View(func(tx *bolt.Tx) error {
		if _, err := testSchema.Version(tx); !errors.Is(err, ErrCorrupt) {
			t.Errorf("8-byte value without Legacy: %v, want ErrCorrupt", err)
		}
		withLegacy := testSchema
		withLegacy.Legacy = func(v []byte) (uint64, bool) { return binary.BigEndian.Uint64(v), len(v) == 8 }
		if v, err := withLegacy.Version(tx); err != nil || v != 1 {
			t.Errorf("8-byte value with Legacy: %d, %v", v, err)
		}
		return nil
	})
	gap := []Migration{{Version: 2, Name: "two", Apply: func(*bolt.Tx) error { return nil }}}
	if err := db.Update(func(tx *bolt.Tx) error {
		return Schema{Bucket: []byte("other"), Key: testSchema.Key}.Migrate(tx, gap)
	}); err == nil {
		t.Error("migrations starting at 2 were accepted")
	}
}
