package validation_test

import (
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func TestObservedShapeSkipsOnlySandboxReferences(t *testing.T) {
	o := &syncpodv1.ObservedPod{Containers: []*syncpodv1.ObservedContainer{
		{Id: "c1", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "gone"},
		{Id: "c2", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, RestartCount: -1},
	}}
	paths := func(err error) string {
		var out []string
		for _, fe := range fielderr.As(err) {
			out = append(out, fe.Path)
		}
		return strings.Join(out, ",")
	}
	if got := paths(validation.Observed(o)); got != "containers[0].sandbox_id,containers[1].restart_count" {
		t.Errorf("Observed: %s", got)
	}
	if got := paths(validation.ObservedShape(o)); got != "containers[1].restart_count" {
		t.Errorf("ObservedShape: %s", got)
	}
}

func TestProblemHelpers(t *testing.T) {
	huge := strings.Repeat("A", 1<<20)
	for _, tc := range []struct {
		name string
		got  string
		ok   bool
	}{
		{"name ok", validation.NameProblem("web.demo"), true},
		{"name upper", validation.NameProblem("Web"), false},
		{"name 254", validation.NameProblem(strings.Repeat("a", 254)), false},
		{"namespace ok", validation.NamespaceProblem("team-a"), true},
		{"namespace Bad_NS", validation.NamespaceProblem("Bad_NS"), false},
		{"namespace 1 MB", validation.NamespaceProblem(huge), false},
		{"container ok", validation.ContainerNameProblem("app"), true},
		{"uid ok", validation.UIDProblem("0b6a7c8e-1f2d-4e3a-9b4c-5d6e7f8a9b0c"), true},
		{"uid garbage", validation.UIDProblem("garbage-uid"), false},
		{"uid 1 MB", validation.UIDProblem(huge), false},
	} {
		if (tc.got == "") != tc.ok {
			t.Errorf("%s: problem %q", tc.name, tc.got)
		}
		if len(tc.got) > 200 || strings.Contains(tc.got, "AAAA") {
			t.Errorf("%s: message echoes the input: %.100q", tc.name, tc.got)
		}
	}
	if p := validation.MapPath("labels", huge); len(p) > 100 || !strings.HasPrefix(p, `labels["AAA`) {
		t.Errorf("MapPath = %.120q", p)
	}
}

func TestDefaults(t *testing.T) {
	if got := validation.NamespaceOrDefault(""); got != "default" {
		t.Errorf("NamespaceOrDefault(\"\") = %q", got)
	}
	if got := validation.NamespaceOrDefault("kube-system"); got != "kube-system" {
		t.Errorf("NamespaceOrDefault(kube-system) = %q", got)
	}
	ten, zero := int64(10), int64(0)
	for _, tc := range []struct {
		name string
		pod  *syncpodv1.Pod
		want int64
	}{
		{"nothing set: 30 s", &syncpodv1.Pod{}, 30},
		{"nil pod: 30 s", nil, 30},
		{"spec", &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: &ten}}, 10},
		{"deletion wins over spec, even 0", &syncpodv1.Pod{DeletionGracePeriodSeconds: &zero, Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: &ten}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := validation.PodGracePeriodSeconds(tc.pod); got != tc.want {
				t.Errorf("PodGracePeriodSeconds = %d, want %d", got, tc.want)
			}
		})
	}
}
