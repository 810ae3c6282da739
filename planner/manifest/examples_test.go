package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExampleParses: every pod file under examples/ (the README's
// and docs' examples, the runtime-specific ones too) parses without an
// error or a warning, so an example never shows a field syncpod refuses.
func TestEveryExampleParses(t *testing.T) {
	root := filepath.Join("..", "..", "examples")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		pods, warns, err := Parse(data)
		switch {
		case err != nil:
			t.Errorf("%s: %v", p, err)
		case len(warns) > 0:
			t.Errorf("%s: warnings %v", p, warns)
		case len(pods) == 0 && !strings.Contains(string(data), "kind: ConfigMap") && !strings.Contains(string(data), "kind: Secret"):
			t.Errorf("%s: no pod in it", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("%d example files found under %s, want the examples", n, root)
	}
}
