package boltfiletest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// DamagedFiles runs check once per kind of damaged database file a crash
// or a bad disk can leave (an empty file, garbage), written as name in a
// fresh directory: dir is that directory, path the file. Afterwards the
// file must be as it was, since a service never rewrites a file it cannot
// read.
func DamagedFiles(t *testing.T, name string, check func(t *testing.T, dir, path string)) {
	t.Helper()
	for _, d := range []struct {
		kind    string
		content []byte
	}{
		{"empty", nil},
		{"garbage", bytes.Repeat([]byte("\xde\xad\xbe\xef"), 4096)},
	} {
		t.Run(d.kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, d.content, 0o600); err != nil {
				t.Fatal(err)
			}
			check(t, dir, path)
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, d.content) {
				t.Errorf("the damaged file was changed (%d bytes, %v)", len(got), err)
			}
		})
	}
}
