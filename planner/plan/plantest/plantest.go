package plantest

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Command runs one command of a scenario and returns its output. An error
// fails the test at the command's line.
type Command func(t *testing.T, d *datadriven.TestData) (string, error)

// Replay runs every file matching pattern as a scenario, each in a subtest
// named after the file. start is called once per file and returns the
// command runner for a fresh world, so files do not share state.
func Replay(t *testing.T, pattern string, start func(t *testing.T) Command) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios match %s: %v", pattern, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			run := start(t)
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				out, err := run(t, d)
				if err != nil {
					d.Fatalf(t, "%s: %v", d.Cmd, err)
				}
				return out
			})
		})
	}
}

// Words is a command's arguments as written, in order: "exit api 3" gives
// ["api", "3"], "probe api liveness=failure" gives ["api", "liveness=failure"].
func Words(d *datadriven.TestData) []string {
	words := make([]string, len(d.CmdArgs))
	for i, a := range d.CmdArgs {
		words[i] = a.String()
	}
	return words
}

// PodFromYAML reads a pod written in YAML with the protojson field names of
// syncpod.v1.Pod (the form the scenarios use). It does not validate.
func PodFromYAML(in string) (*syncpodv1.Pod, error) {
	j, err := yaml.YAMLToJSON([]byte(in))
	if err != nil {
		return nil, err
	}
	p := &syncpodv1.Pod{}
	if err := protojson.Unmarshal(j, p); err != nil {
		return nil, err
	}
	return p, nil
}
