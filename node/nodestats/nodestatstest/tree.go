// Package nodestatstest makes the fake host trees (cgroup hierarchies,
// meminfo) that tests of nodestats and of its users read instead of the
// host's.
package nodestatstest

import (
	"os"
	"path/filepath"
	"testing"
)

// Tree writes files (a path relative to a new temporary directory: its
// content) and returns the directory.
func Tree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
