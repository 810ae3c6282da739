package validation_test

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// FuzzPod feeds wire-format pods and observed pods to the validation.
// Neither may panic; the answer is deterministic; every problem has a
// bounded path and message (no echo of a huge input); and a pod
// it accepts keeps the promises the executor relies on.
func FuzzPod(f *testing.F) {
	seed := &syncpodv1.Pod{Uid: "0b6a7c8e-1f2d-4e3a-9b4c-5d6e7f8a9b0c", Name: "web", Namespace: "default",
		Labels: map[string]string{"app": "web"}, Spec: &syncpodv1.PodSpec{
			InitContainers: []*syncpodv1.Container{{Name: "init", Image: "busybox", Command: []string{"true"}}},
			Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox", Args: []string{"sleep", "1"},
				Env: []*syncpodv1.EnvVar{{Name: "A", Value: "b"}}, Ports: []*syncpodv1.ContainerPort{{ContainerPort: 80}}}}}}
	b, _ := proto.Marshal(seed)
	f.Add(b, []byte{})
	o, _ := proto.Marshal(&syncpodv1.ObservedPod{Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s", State: 1}},
		Containers: []*syncpodv1.ObservedContainer{{Id: "c", Name: "app", State: 2, SandboxId: "s", RestartCount: -1}}})
	f.Add(b, o)
	f.Fuzz(func(t *testing.T, podBytes, observedBytes []byte) {
		p, ob := &syncpodv1.Pod{}, &syncpodv1.ObservedPod{}
		if proto.Unmarshal(podBytes, p) != nil || proto.Unmarshal(observedBytes, ob) != nil {
			return
		}
		for _, err := range []error{validation.Pod(p), validation.Observed(ob)} {
			if err == nil {
				continue
			}
			if !errors.Is(err, fielderr.ErrInvalid) {
				t.Fatalf("not ErrInvalid: %v", err)
			}
			for _, fe := range fielderr.As(err) {
				if len(fe.Path) > 512 || len(fe.Message) > 1024 {
					t.Fatalf("unbounded problem: %d-byte path, %d-byte message", len(fe.Path), len(fe.Message))
				}
			}
		}
		if a, b := validation.Pod(p), validation.Pod(p); (a == nil) != (b == nil) || (a != nil && a.Error() != b.Error()) {
			t.Fatal("not deterministic")
		}
		if validation.Pod(p) != nil {
			return
		}
		all := append(slices.Clone(p.GetSpec().GetInitContainers()), p.GetSpec().GetContainers()...)
		if len(all) > validation.MaxContainers || len(p.GetSpec().GetContainers()) == 0 {
			t.Fatalf("accepted %d containers", len(all))
		}
		names := map[string]bool{}
		for _, c := range all {
			if names[c.GetName()] || validation.ContainerNameProblem(c.GetName()) != "" {
				t.Fatalf("accepted container name %q", c.GetName())
			}
			names[c.GetName()] = true
			size := 0
			for _, s := range append(slices.Clone(c.GetCommand()), c.GetArgs()...) {
				size += len(s) + 1
			}
			for _, e := range c.GetEnv() {
				size += len(e.GetName()) + len(e.GetValue()) + 2
			}
			if size > validation.MaxArgvBytes {
				t.Fatalf("accepted %d bytes of argv and env", size)
			}
		}
		if validation.NameProblem(p.GetName()) != "" {
			t.Fatalf("accepted name %q", p.GetName())
		}
	})
}
