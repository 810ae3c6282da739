package validation_test

import (
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// acceptPod is a minimal valid pod for the tests of this file.
func acceptPod() *syncpodv1.Pod {
	return &syncpodv1.Pod{Name: "web", Spec: &syncpodv1.PodSpec{
		Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox:1.36"}},
	}}
}

func problemAt(err error, path string) string {
	for _, fe := range fielderr.As(err) {
		if fe.Path == path {
			return fe.Message
		}
	}
	return ""
}

// a pod name is a DNS-1123 subdomain as the API server checks it:
// up to 253 characters, with no limit on the length of one dot-separated
// part; container names and namespaces stay DNS-1123 labels.
func TestPodNameIsADNSSubdomainWithoutPartLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  string
		ok   bool
	}{
		{"64 characters, no dot", strings.Repeat("a", 64), true},
		{"200 characters, no dot", "pod-" + strings.Repeat("x", 196), true},
		{"253 characters", strings.Repeat("a", 253), true},
		{"a 100-character part among others", "a." + strings.Repeat("b", 100) + ".c", true},
		{"254 characters", strings.Repeat("a", 254), false},
		{"empty part", "a..b", false},
		{"part ending in '-'", "a-.b", false},
		{"upper case", "Web", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := acceptPod()
			p.Name = tc.pod
			err := validation.Pod(p)
			if got := problemAt(err, "name") == ""; got != tc.ok {
				t.Errorf("name %.40q…: accepted %v, want %v (%v)", tc.pod, got, tc.ok, err)
			}
			if got := validation.NameProblem(tc.pod) == ""; got != tc.ok {
				t.Errorf("NameProblem: accepted %v, want %v", got, tc.ok)
			}
			if got := len(validation.PodRefProblems("pod", "", tc.pod, "")) == 0; got != tc.ok {
				t.Errorf("PodRefProblems: accepted %v, want %v", got, tc.ok)
			}
		})
	}
	if validation.ContainerNameProblem(strings.Repeat("a", 64)) == "" {
		t.Error("a 64-character container name is accepted; it must stay a DNS-1123 label")
	}
	if validation.NamespaceProblem(strings.Repeat("a", 64)) == "" {
		t.Error("a 64-character namespace is accepted; it must stay a DNS-1123 label")
	}
}

// env names and envFrom prefixes follow the API server's relaxed
// rule: any printable ASCII character but '='.
func TestEnvNamesAndPrefixesAcceptPrintableASCIIButEquals(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"1-", true}, {"$_-", true}, {"#@!", true}, {"ABC_", true}, {"p-", true},
		{"with space", true}, {"~", true}, {"9LIVES", true},
		{"A=B", false}, {"tab\t", false}, {"é", false}, {"nul\x00", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := acceptPod()
			c := p.Spec.Containers[0]
			c.Env = []*syncpodv1.EnvVar{{Name: tc.name, Value: "v"}}
			c.EnvFrom = []*syncpodv1.EnvFromSource{{Prefix: tc.name, ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "cfg"}}}
			err := validation.Pod(p)
			for _, path := range []string{"spec.containers[0].env[0].name", "spec.containers[0].env_from[0].prefix"} {
				msg := problemAt(err, path)
				if (msg == "") != tc.ok {
					t.Errorf("%s: problem %q, want accepted %v", path, msg, tc.ok)
				}
				if !tc.ok && !strings.Contains(msg, "printable ASCII") {
					t.Errorf("%s: message %q does not say what is allowed", path, msg)
				}
			}
			if got := validation.EnvNameProblem(tc.name) == ""; got != tc.ok {
				t.Errorf("EnvNameProblem: accepted %v, want %v", got, tc.ok)
			}
		})
	}
}

// spec.os.name is accepted when it is the node's OS; another OS
// is refused naming the field, an unknown one too.
func TestPodOSMustBeTheNodesOS(t *testing.T) {
	for _, tc := range []struct {
		os   string
		want string // "" accepted, else a part of the message
	}{
		{validation.NodeOS, ""},
		{"windows", "PodOSNotSupported"},
		{"plan9", `"linux" or "windows"`},
		{"", "required"},
	} {
		t.Run(tc.os, func(t *testing.T) {
			if tc.os == "windows" && validation.NodeOS == "windows" {
				t.Skip("the node runs windows")
			}
			p := acceptPod()
			p.Spec.Os = &syncpodv1.PodOS{Name: tc.os}
			msg := problemAt(validation.Pod(p), "spec.os.name")
			if tc.want == "" && msg != "" || tc.want != "" && !strings.Contains(msg, tc.want) {
				t.Errorf("spec.os.name %q: problem %q, want %q", tc.os, msg, tc.want)
			}
		})
	}
}

// spec.overhead is accepted as quantities.
func TestPodOverheadIsAccepted(t *testing.T) {
	p := acceptPod()
	p.Spec.Overhead = &syncpodv1.ResourceList{Cpu: "10m", Memory: "1Mi"}
	if err := validation.Pod(p); err != nil {
		t.Fatalf("overhead refused: %v", err)
	}
	p.Spec.Overhead = &syncpodv1.ResourceList{Cpu: "-1", Memory: "lots"}
	err := validation.Pod(p)
	for _, path := range []string{"spec.overhead.cpu", "spec.overhead.memory"} {
		if problemAt(err, path) == "" {
			t.Errorf("%s: bad quantity accepted (%v)", path, err)
		}
	}
}
