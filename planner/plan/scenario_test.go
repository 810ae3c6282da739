package plan_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/yaml"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/validate"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/scenarios/*.txt")

// block is one command of a scenario file: "command args", optional input
// lines, "----", the expected output, a blank line.
type block struct {
	leading string // comments, blank lines, the command and its input, verbatim
	cmd     string
	args    []string
	input   string
	output  string
	line    int
}

func parseScenario(t *testing.T, path string) (blocks []block, trailing string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var lead []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			lead = append(lead, l)
			continue
		}
		b := block{line: i + 1}
		f := strings.Fields(l)
		b.cmd, b.args = f[0], f[1:]
		lead = append(lead, l)
		var input []string
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
			lead = append(lead, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: %q has no ---- line", path, b.line, l)
		}
		lead = append(lead, "----")
		var out []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			out = append(out, lines[i])
		}
		b.leading, b.input, b.output = strings.Join(lead, "\n"), strings.Join(input, "\n"), strings.Join(out, "\n")
		lead = nil
		blocks = append(blocks, b)
		if i < len(lines) {
			lead = append(lead, lines[i]) // the blank separator
		}
	}
	return blocks, strings.Join(lead, "\n")
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			blocks, trailing := parseScenario(t, path)
			var s *sim
			var last *syncpodv1.PodActions
			var rewritten strings.Builder
			for i := range blocks {
				b := &blocks[i]
				got, err := runCommand(t, &s, &last, b)
				if err != nil {
					t.Fatalf("%s:%d: %s: %v", path, b.line, b.cmd, err)
				}
				fmt.Fprintf(&rewritten, "%s\n%s\n", b.leading, got)
				if !*update && got != b.output {
					t.Errorf("%s:%d: %s %s:\n got:\n%s\nwant:\n%s", path, b.line, b.cmd, strings.Join(b.args, " "), got, b.output)
				}
			}
			if trailing != "" {
				rewritten.WriteString(trailing + "\n")
			}
			if *update {
				if err := os.WriteFile(path, []byte(rewritten.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func parsePodYAML(in string) (*syncpodv1.Pod, error) {
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

func parseProbe(s string) (syncpodv1.ProbeResult, error) {
	switch s {
	case "success":
		return syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS, nil
	case "failure":
		return syncpodv1.ProbeResult_PROBE_RESULT_FAILURE, nil
	case "none":
		return syncpodv1.ProbeResult_PROBE_RESULT_UNSPECIFIED, nil
	}
	return 0, fmt.Errorf("probe result %q: want success, failure or none", s)
}

// runCommand runs one scenario command and returns its output.
//
//	pod [complete-inits] [probes-pass]   (YAML pod as input) set the desired pod
//	plan                                 Compute, validated inputs
//	apply                                carry out the last plan
//	exit NAME CODE [REASON]              newest instance of NAME exits
//	state NAME STATE                     newest instance of NAME gets STATE
//	probe NAME liveness=R startup=R      results for the newest instance
//	sandbox-dies                         newest sandbox NOTREADY, its containers exit 137
//	delete                               set the pod's deletion_time
//	observed                             show the observed state
func runCommand(t *testing.T, sp **sim, last **syncpodv1.PodActions, b *block) (string, error) {
	s := *sp
	if s == nil && b.cmd != "pod" {
		return "", fmt.Errorf("first command must be pod")
	}
	arg := func(i int) string {
		if i < len(b.args) {
			return b.args[i]
		}
		return ""
	}
	switch b.cmd {
	case "pod":
		p, err := parsePodYAML(b.input)
		if err != nil {
			return "", err
		}
		if err := validate.Pod(p); err != nil {
			return "", err
		}
		if s == nil {
			s = newSim(p)
			*sp = s
		}
		s.pod = p
		for _, a := range b.args {
			switch a {
			case "complete-inits":
				s.completeInits = true
			case "probes-pass":
				s.probesPass = true
			default:
				return "", fmt.Errorf("unknown pod option %q", a)
			}
		}
		return "ok", nil
	case "plan":
		probes := s.results()
		if err := validate.Request(s.pod, s.obs, probes); err != nil {
			return "", fmt.Errorf("inputs invalid: %w", err)
		}
		a := plan.Compute(s.pod, s.obs, probes)
		checkWellFormed(t, s.pod, a)
		*last = a
		return renderFull(a), nil
	case "apply":
		if *last == nil {
			return "", fmt.Errorf("apply before plan")
		}
		s.apply(*last)
		*last = nil
		return s.describe(), nil
	case "exit":
		c := s.newest(arg(0))
		if c == nil {
			return "", fmt.Errorf("no container %q", arg(0))
		}
		code, err := strconv.Atoi(arg(1))
		if err != nil {
			return "", err
		}
		s.exit(c, int32(code), arg(2))
		return s.describe(), nil
	case "state":
		c := s.newest(arg(0))
		v, ok := syncpodv1.ContainerState_value["CONTAINER_STATE_"+arg(1)]
		if c == nil || !ok {
			return "", fmt.Errorf("bad state command")
		}
		c.State = syncpodv1.ContainerState(v)
		return s.describe(), nil
	case "probe":
		c := s.newest(arg(0))
		if c == nil {
			return "", fmt.Errorf("no container %q", arg(0))
		}
		r := &syncpodv1.ContainerProbeResults{Name: c.Name, ContainerId: c.Id}
		for _, kv := range b.args[1:] {
			k, v, _ := strings.Cut(kv, "=")
			res, err := parseProbe(v)
			if err != nil {
				return "", err
			}
			switch k {
			case "liveness":
				r.Liveness = res
			case "startup":
				r.Startup = res
			default:
				return "", fmt.Errorf("unknown probe %q", k)
			}
		}
		kept := s.probes[:0]
		for _, p := range s.probes {
			if p.Name != r.Name {
				kept = append(kept, p)
			}
		}
		s.probes = append(kept, r)
		return s.describe(), nil
	case "sandbox-dies":
		sb := s.newestSandbox()
		if sb == nil {
			return "", fmt.Errorf("no sandbox")
		}
		sb.State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
		for _, c := range s.obs.Containers {
			if c.SandboxId == sb.Id && c.State == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				s.exit(c, 137, "Error")
			}
		}
		return s.describe(), nil
	case "delete":
		s.pod.DeletionTime = &timestamppb.Timestamp{Seconds: 2_000_000}
		return "ok", nil
	case "observed":
		return s.describe(), nil
	}
	return "", fmt.Errorf("unknown command %q", b.cmd)
}
