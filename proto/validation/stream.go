package validation

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Bounds of the streaming RPCs (exec, attach, port-forward, logs): a
// session may carry any amount of data, but each message is bounded, so
// no single message makes a service buffer an unbounded amount.
const (
	// MaxStreamChunk bounds the standard input or forwarded bytes of one
	// message (clients send what one read returns: 32 KiB for syncpodctl).
	MaxStreamChunk = 1 << 20
	// MaxTerminalDim bounds a terminal's width and height: the kernel's
	// struct winsize holds 16-bit values.
	MaxTerminalDim = 1<<16 - 1
)

// PodRefProblems checks a reference to a pod by namespace and name, or by
// uid: a name or a uid is required, and each part given is well formed (a
// name must be a pod name, so no huge or path-like string travels
// further). path is the reference's field path ("start.pod").
func PodRefProblems(path, namespace, name, uid string) fielderr.Errors {
	var l list
	if name == "" && uid == "" {
		l.Add(path+".name", "required unless %s.uid is set", path)
	}
	if namespace != "" {
		l.check(path+".namespace", NamespaceProblem(namespace))
	}
	if name != "" {
		l.check(path+".name", NameProblem(name))
	}
	if uid != "" {
		l.check(path+".uid", UIDProblem(uid))
	}
	return l.Errors()
}

// ContainerRefProblems checks a container name in a streaming request:
// required, and a DNS-1123 label.
func ContainerRefProblems(path, name string) fielderr.Errors {
	var l list
	if name == "" {
		l.Add(path, "required")
	} else {
		l.check(path, ContainerNameProblem(name))
	}
	return l.Errors()
}

// CommandProblems checks an exec command: required, at most MaxArgs
// entries, each at most the kernel's MAX_ARG_STRLEN, all together at most
// its ARG_MAX.
func CommandProblems(path string, cmd []string) fielderr.Errors {
	var l list
	if len(cmd) == 0 {
		l.Add(path, "required")
		return l.Errors()
	}
	if len(cmd) > MaxArgs {
		l.Add(path, "%d entries exceed the limit of %d", len(cmd), MaxArgs)
		return l.Errors()
	}
	total := 0
	for i, a := range cmd {
		if len(a)+1 > MaxArgLen {
			l.Add(fmt.Sprintf("%s[%d]", path, i), "%d bytes exceed the kernel's limit of %d per argument (MAX_ARG_STRLEN)", len(a), MaxArgLen-1)
		}
		total += len(a) + 1
	}
	if total > MaxArgvBytes {
		l.Add(path, "%d bytes exceed the kernel's limit of %d for a command line (ARG_MAX)", total, MaxArgvBytes)
	}
	return l.Errors()
}

// StreamInputProblems checks one input message of an exec or attach
// session: standard input at most MaxStreamChunk bytes, a terminal size
// at most MaxTerminalDim each way.
func StreamInputProblems(path string, in *syncpodv1.StreamInput) fielderr.Errors {
	var l list
	switch v := in.GetInput().(type) {
	case *syncpodv1.StreamInput_Stdin:
		if len(v.Stdin) > MaxStreamChunk {
			l.Add(path+".stdin", "%d bytes exceed the limit of %d per message", len(v.Stdin), MaxStreamChunk)
		}
	case *syncpodv1.StreamInput_Resize:
		if w := v.Resize.GetWidth(); w > MaxTerminalDim {
			l.Add(path+".resize.width", "%d exceeds the limit of %d", w, MaxTerminalDim)
		}
		if h := v.Resize.GetHeight(); h > MaxTerminalDim {
			l.Add(path+".resize.height", "%d exceeds the limit of %d", h, MaxTerminalDim)
		}
	}
	return l.Errors()
}

// StreamDataProblems checks the forwarded bytes of one port-forward
// message.
func StreamDataProblems(path string, data []byte) fielderr.Errors {
	var l list
	if len(data) > MaxStreamChunk {
		l.Add(path, "%d bytes exceed the limit of %d per message", len(data), MaxStreamChunk)
	}
	return l.Errors()
}

// TimestampProblems checks an optional timestamp (since_time): unset, or
// a valid instant.
func TimestampProblems(path string, t *timestamppb.Timestamp) fielderr.Errors {
	var l list
	l.timestamp(path, t)
	return l.Errors()
}
