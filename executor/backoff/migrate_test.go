package backoff

import (
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
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
}

func TestEveryMigrationHasATest(t *testing.T) {
	for _, m := range migrations {
		if migrationTests[m.version] == nil {
			t.Errorf("migration %d (%s) has no test in migrationTests", m.version, m.name)
		}
	}
}

func TestMigrations(t *testing.T) {
	for i, m := range migrations {
		t.Run(m.name, func(t *testing.T) {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "m.db"), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *bolt.Tx) error { return migrate(tx, migrations[:i+1]) }); err != nil {
				t.Fatal(err)
			}
			_ = db.View(func(tx *bolt.Tx) error {
				if v := schemaVersion(tx); v != m.version {
					t.Errorf("schema version %d, want %d", v, m.version)
				}
				return nil
			})
			migrationTests[m.version](t, db)
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
