package volumes

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// errEnvFileSyntax classifies a malformed env file.
var errEnvFileSyntax = errors.New("invalid environment variable format")

// fileKeyValue reads ref's variable from its env file under the pod's
// volume directory, as the kubelet does when it creates the
// container: found is false for a key the file does not set, or sets to
// the empty string, when ref is optional (the variable is then left
// out). A volume that is not set up, a file that cannot be read or
// parsed, and a missing non-optional key are errors, with the kubelet's
// message and what it logs.
func fileKeyValue(vols Paths, ref *syncpodv1.FileKeySelector) (val string, found bool, err error) {
	dir, ok := vols[ref.GetVolumeName()]
	if !ok {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.GetVolumeName())
	}
	// The path stays inside the volume, symbolic links included, as the
	// kubelet's secure join keeps it: an absolute path is taken from the
	// volume's root.
	rel := strings.TrimPrefix(filepath.Clean("/"+ref.GetPath()), "/")
	f, err := os.OpenInRoot(dir, rel)
	if err != nil {
		return "", false, fmt.Errorf("couldn't parse env file: open %q in volume %q: %w", ref.GetPath(), ref.GetVolumeName(), err)
	}
	defer func() { _ = f.Close() }()
	val, err = parseEnvFile(f, ref.GetKey())
	if err != nil {
		return "", false, fmt.Errorf("couldn't parse env file %q in volume %q: %w", ref.GetPath(), ref.GetVolumeName(), err)
	}
	if val == "" { // the kubelet cannot tell an empty value from none
		if ref.GetOptional() {
			return "", false, nil
		}
		return "", false, fmt.Errorf("environment variable key %q not found in file %q", ref.GetKey(), filepath.Join(dir, rel))
	}
	return val, true, nil
}

// parseEnvFile returns key's value in r, an env file in the strict
// syntax the kubelet reads (its pkg/kubelet/util/env): KEY='value'
// lines, the value single-quoted and taken literally (it may span
// lines), a '#' comment after the closing quote, blank lines and lines
// starting with '#' skipped, leading blanks ignored. A blank before '='
// is an error; a blank after it makes the value empty (as a shell
// would). The file is read up to the first line setting key; every line
// before it must be well formed, and a line is at most 64 KiB. "" when
// the file does not set key.
func parseEnvFile(r io.Reader, key string) (string, error) {
	sc := bufio.NewScanner(r) // bufio.MaxScanTokenSize per line
	n := 0
	bad := func(line int, why string) error { return fmt.Errorf("%w at line %d: %s", errEnvFileSyntax, line, why) }
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return "", bad(n, "missing '='")
		case strings.TrimRight(name, " \t") == "":
			return "", bad(n, "empty variable name")
		case strings.TrimRight(name, " \t") != name:
			return "", bad(n, "whitespace before '=' is not allowed")
		}
		if strings.TrimLeft(value, " \t") != value {
			if name == key {
				return "", nil
			}
			continue
		}
		if !strings.HasPrefix(value, "'") {
			return "", bad(n, "value must be enclosed in single quotes")
		}
		var b strings.Builder
		rest, start := value[1:], n
		for {
			if i := strings.IndexByte(rest, '\''); i >= 0 {
				b.WriteString(rest[:i])
				if after := strings.TrimLeft(rest[i+1:], " \t"); after != "" && after[0] != '#' {
					return "", bad(n, "unexpected content after closing quote")
				}
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
			if !sc.Scan() {
				if err := sc.Err(); err != nil {
					return "", err
				}
				return "", fmt.Errorf("%w starting at line %d: unclosed single quote", errEnvFileSyntax, start)
			}
			n++
			rest = sc.Text()
		}
		if name == key {
			return b.String(), nil
		}
	}
	return "", sc.Err()
}
