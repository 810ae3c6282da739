package backoff

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/syncpod/syncpod/internal/clocktest"
)

// migrationTests holds one test per migration version; TestEveryMigrationHasATest
// fails when a migration is added without one.
var migrationTests = map[uint64]func(t *testing.T, db *bolt.DB){
	1: func(t *testing.T, db *bolt.DB) {
		if err := db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketMeta) == nil || tx.Bucket(bucketBackoff) == nil {
				t.Error("buckets missing after migration 1")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	},
	2: func(t *testing.T, db *bolt.DB) {
		if err := db.View(func(tx *bolt.Tx) error {
			if got := string(tx.Bucket(bucketMeta).Get(keySchema)); got != "2" {
				t.Errorf("schema_version stored as %q, want decimal \"2\" (the planner's encoding)", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	},
	3: func(t *testing.T, db *bolt.DB) {
		if err := db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketUserns) == nil {
				t.Error("userns bucket missing after migration 3")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	},
}

// A version 1 file (schema_version big-endian, entries present) opens,
// is migrated to decimal, and keeps its entries.
func TestVersion1FileIsMigrated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "executor.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(bucketMeta)
		root, _ := tx.CreateBucket(bucketBackoff)
		if err := meta.Put(keySchema, []byte{0, 0, 0, 0, 0, 0, 0, 1}); err != nil {
			return err
		}
		pod, _ := root.CreateBucket([]byte("uid-1"))
		return pod.Put([]byte("web\x00h1"), []byte(`{"delay_ns":20000000000,"last_update_ns":1700000000000000000}`))
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	c := clocktest.New(time.Unix(1_700_000_010, 0))
	s := openT(t, path, Config{Clock: c})
	e, ok, err := s.Get(key)
	if err != nil || !ok || e.Delay != 20*time.Second {
		t.Fatalf("entry after migration: %+v, %v, %v; want the 20s delay kept", e, ok, err)
	}
	_ = s.db.View(func(tx *bolt.Tx) error {
		if got := string(tx.Bucket(bucketMeta).Get(keySchema)); got != strconv.Itoa(SchemaVersion) {
			t.Errorf("schema_version %q after Open, want %q", got, strconv.Itoa(SchemaVersion))
		}
		return nil
	})
}

func TestEveryMigrationHasATest(t *testing.T) {
	for _, m := range migrations {
		if migrationTests[m.Version] == nil {
			t.Errorf("migration %d (%s) has no test in migrationTests", m.Version, m.Name)
		}
	}
}

func TestMigrations(t *testing.T) {
	for i, m := range migrations {
		t.Run(m.Name, func(t *testing.T) {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "m.db"), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *bolt.Tx) error { return schema.Migrate(tx, migrations[:i+1]) }); err != nil {
				t.Fatal(err)
			}
			_ = db.View(func(tx *bolt.Tx) error {
				if v, err := schema.Version(tx); err != nil || v != m.Version {
					t.Errorf("schema version %d (%v), want %d", v, err, m.Version)
				}
				return nil
			})
			migrationTests[m.Version](t, db)
		})
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	db, _ := bolt.Open(path, 0o600, nil)
	_ = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{0, 0, 0, 0, 0, 0, 0, 99})
	})
	_ = db.Close()
	if _, err := Open(path, Config{}); err == nil {
		t.Fatal("Open of a newer schema succeeded")
	}
}

func TestFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestUnreadableSchemaVersionIsCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "executor.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(bucketMeta)
		return meta.Put(keySchema, []byte("two"))
	})
	_ = db.Close()
	if _, err := Open(path, Config{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open = %v, want ErrCorrupt naming %s", err, path)
	}
}
