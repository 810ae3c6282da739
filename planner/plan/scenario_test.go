package plan_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/plan/plantest"
	"github.com/syncpod/syncpod/planner/validate"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestScenarios replays testdata/scenarios/*.txt, each a pod's life through
// Compute and the in-test runtime (see runCommand and the README there).
func TestScenarios(t *testing.T) {
	plantest.Replay(t, "testdata/scenarios/*.txt", func(t *testing.T) plantest.Command {
		var s *sim
		var last *syncpodv1.PodActions
		return func(t *testing.T, d *datadriven.TestData) (string, error) {
			return runCommand(t, &s, &last, d.Cmd, plantest.Words(d), d.Input)
		}
	})
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
func runCommand(t *testing.T, sp **sim, last **syncpodv1.PodActions, cmd string, args []string, input string) (string, error) {
	s := *sp
	if s == nil && cmd != "pod" {
		return "", fmt.Errorf("first command must be pod")
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch cmd {
	case "pod":
		p, err := plantest.PodFromYAML(input)
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
		for _, a := range args {
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
		for _, kv := range args[1:] {
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
	return "", fmt.Errorf("unknown command %q", cmd)
}
