// Package buildtags reads the build tags of syncpod's static binaries from
// mk/static-tags, the file the Makefile and mk/conformance.sh read too, so
// that the tests which build the binaries build what `make build` does.
package buildtags

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// File is the tags file's path from the repository's root.
const File = "mk/static-tags"

// Static returns the static build's tags, comma-separated as -tags takes
// them, reading File in the first of dir and its parents that holds it.
func Static(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, File))
		if err == nil {
			return Parse(string(b)), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s in %s or any directory above it", File, dir)
		}
		dir = parent
	}
}

// Parse turns the file's text into the -tags value: a tag a line, '#'
// starting a comment, blank lines skipped.
func Parse(text string) string {
	var tags []string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		tags = append(tags, strings.Fields(line)...)
	}
	return strings.Join(tags, ",")
}
