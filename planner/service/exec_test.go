package service

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func TestExecGoesThroughTheExecutor(t *testing.T) {
	c, st, ex := serveWithExecutor(t)
	lastStart := func() *executorv1.ExecStart {
		starts := ex.Requests().Starts
		if len(starts) == 0 {
			t.Fatal("the executor started no session")
		}
		return starts[len(starts)-1]
	}
	ctx := context.Background()
	p, _, err := st.Apply(ctx, &syncpodv1.Pod{Name: "web", Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{
		{Name: "app", Image: "busybox"}, {Name: "stopped", Image: "busybox"}},
		EphemeralContainers: []*syncpodv1.Container{{Name: "debugger", Image: "busybox"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateStatus(ctx, p.GetUid(), &syncpodv1.PodStatus{ContainerStatuses: []*syncpodv1.ContainerStatus{
		{Name: "app", ContainerId: "ctr-app", State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Running{Running: &syncpodv1.ContainerStateRunning{}}}},
		{Name: "stopped", ContainerId: "ctr-stopped", State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Terminated{Terminated: &syncpodv1.ContainerStateTerminated{}}}},
	}, EphemeralContainerStatuses: []*syncpodv1.ContainerStatus{
		{Name: "debugger", ContainerId: "ctr-dbg", State: &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Running{Running: &syncpodv1.ContainerStateRunning{}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	session := func(start *plannerv1.ExecStart, inputs ...*syncpodv1.StreamInput) (string, int32, error) {
		stream, err := c.Exec(ctx)
		if err != nil {
			return "", 0, err
		}
		if err := stream.Send(&plannerv1.ExecRequest{Start: start}); err != nil {
			return "", 0, err
		}
		for _, in := range inputs {
			if err := stream.Send(&plannerv1.ExecRequest{Input: in}); err != nil {
				return "", 0, err
			}
		}
		var out strings.Builder
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return out.String(), -1, nil
			}
			if err != nil {
				return out.String(), 0, err
			}
			switch o := msg.GetOutput().GetOutput().(type) {
			case *syncpodv1.StreamOutput_Stdout:
				out.Write(o.Stdout)
			case *syncpodv1.StreamOutput_Stderr:
				out.WriteString("<" + string(o.Stderr) + ">")
			case *syncpodv1.StreamOutput_ExitCode:
				return out.String(), o.ExitCode, nil
			}
		}
	}
	out, code, err := session(&plannerv1.ExecStart{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app", Command: []string{"cat"}, Stdin: true, Tty: true},
		&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Resize{Resize: &syncpodv1.TerminalSize{Width: 80, Height: 24}}},
		&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Stdin{Stdin: []byte("hello")}},
		&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_StdinClosed{StdinClosed: true}})
	if err != nil || out != "<resized>hello" || code != 5 {
		t.Fatalf("session: %q exit %d, %v", out, code, err)
	}
	if got := lastStart(); got.GetContainerId() != "ctr-app" || got.GetCommand()[0] != "cat" || !got.GetStdin() || !got.GetTty() {
		t.Fatalf("executor started %v", got)
	}
	// an ephemeral container is reached by its name.
	if _, _, err := session(&plannerv1.ExecStart{Pod: &plannerv1.PodRef{Name: "web"}, Container: "debugger", Command: []string{"echo"}},
		&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_StdinClosed{StdinClosed: true}}); err != nil {
		t.Fatalf("exec in the ephemeral container: %v", err)
	}
	if got := lastStart(); got.GetContainerId() != "ctr-dbg" {
		t.Fatalf("executor started %v", got)
	}
	// Attach goes the same way, to the running instance.
	att, err := c.Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := att.Send(&plannerv1.AttachRequest{Start: &plannerv1.AttachStart{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app", Stdin: true}}); err != nil {
		t.Fatal(err)
	}
	if err := att.Send(&plannerv1.AttachRequest{Input: &syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Stdin{Stdin: []byte("hey")}}}); err != nil {
		t.Fatal(err)
	}
	if msg, err := att.Recv(); err != nil || string(msg.GetOutput().GetStdout()) != "hey" {
		t.Fatalf("attach output %v %v", msg, err)
	}
	_ = att.CloseSend()
	if msg, err := att.Recv(); err != nil || msg.GetOutput().GetExitCode() != 9 {
		t.Fatalf("attach end %v %v", msg, err)
	}
	if got := lastStart(); got.GetContainerId() != "ctr-app" || !got.GetStdin() {
		t.Fatalf("attach started %v", got)
	}
	for _, tc := range []struct {
		name  string
		start *plannerv1.AttachStart
		code  codes.Code
		msg   string
	}{
		{"every problem at once", &plannerv1.AttachStart{}, codes.InvalidArgument, "start.pod.name: required unless start.pod.uid is set; start.container: required"},
		{"not running", &plannerv1.AttachStart{Pod: &plannerv1.PodRef{Name: "web"}, Container: "stopped"}, codes.FailedPrecondition, "not running"},
	} {
		t.Run("attach "+tc.name, func(t *testing.T) {
			s, err := c.Attach(ctx)
			if err == nil {
				err = s.Send(&plannerv1.AttachRequest{Start: tc.start})
			}
			if err == nil {
				_, err = s.Recv()
			}
			wantStatus(t, err, tc.code, tc.msg)
		})
	}
	for _, tc := range []struct {
		name  string
		start *plannerv1.ExecStart
		code  codes.Code
		msg   string
	}{
		{"every problem at once", &plannerv1.ExecStart{}, codes.InvalidArgument, "start.pod.name: required unless start.pod.uid is set; start.container: required; start.command: required"},
		{"no start", nil, codes.InvalidArgument, "start: required"},
		{"wrong container", &plannerv1.ExecStart{Pod: &plannerv1.PodRef{Name: "web"}, Container: "nosuch", Command: []string{"sh"}}, codes.NotFound, "choose one of [app stopped debugger]"},
		{"not running", &plannerv1.ExecStart{Pod: &plannerv1.PodRef{Name: "web"}, Container: "stopped", Command: []string{"sh"}}, codes.FailedPrecondition, "not running"},
		{"unknown pod", &plannerv1.ExecStart{Pod: &plannerv1.PodRef{Name: "nosuch"}, Container: "app", Command: []string{"sh"}}, codes.NotFound, "nosuch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := session(tc.start)
			wantStatus(t, err, tc.code, tc.msg)
		})
	}
	// Later messages are bounded too: the session ends with the field,
	// after the good input before it went through.
	big := make([]byte, validation.MaxStreamChunk+1)
	for _, tc := range []struct {
		name  string
		input *syncpodv1.StreamInput
		field string
	}{
		{"stdin over 1 MiB in one message", &syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Stdin{Stdin: big}}, "input.stdin: "},
		{"a terminal 70,000 columns wide", &syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Resize{Resize: &syncpodv1.TerminalSize{Width: 70000, Height: 24}}}, "input.resize.width: "},
	} {
		t.Run("later message: "+tc.name, func(t *testing.T) {
			out, _, err := session(&plannerv1.ExecStart{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app", Command: []string{"cat"}, Stdin: true},
				&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Stdin{Stdin: []byte("ok")}}, tc.input)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.field) || len(status.Convert(err).Details()) == 0 {
				t.Fatalf("got %v (output %q), want InvalidArgument naming %s", err, out, tc.field)
			}
			// The executor's session may have been cut before it read its
			// start: ex.started (buffered) is not waited for here.
		})
	}
	// Every bad field of a start at once, with the bounds.
	_, _, err = session(&plannerv1.ExecStart{Pod: &plannerv1.PodRef{Name: strings.Repeat("n", 300), Namespace: "Bad_NS", Uid: "garbage"}, Container: "../x", Command: make([]string, validation.MaxArgs+1)})
	for _, field := range []string{"start.pod.name: ", "start.pod.namespace: ", "start.pod.uid: ", "start.container: ", "start.command: "} {
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), field) {
			t.Errorf("bad start: %v, want InvalidArgument naming %s", err, field)
		}
	}
}

// wantStatus requires err to be of code with msg in its message, and
// bad input to name its fields in a BadRequest detail.
func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %v, want %s with %q", err, code, msg)
	}
	if code == codes.InvalidArgument && len(status.Convert(err).Details()) == 0 {
		t.Errorf("%v carries no BadRequest detail naming the fields", err)
	}
}
