package wake

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd/api/events"
	eventsapi "github.com/containerd/containerd/api/services/events/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"k8s.io/cri-client/pkg/util"
)

// Namespace is containerd's namespace of the containers CRI makes.
const Namespace = "k8s.io"

// Topics are the task events that wake a relist: a container or a
// sandbox's task created, started, exited, out of memory or deleted.
// containerd's CRI plugin updates the container status it lists after it
// handles the exit, so the deletion that follows it, and the PLEG's
// follow-up relist, see the change listed. An exec's process exits with a
// /tasks/exit too; that one wakes nothing (see wakes).
var Topics = []string{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/oom", "/tasks/delete"}

const topicExit = "/tasks/exit"

// filters are the subscription's containerd filters: any of them matches.
func filters() []string {
	fs := make([]string, len(Topics))
	for i, t := range Topics {
		fs[i] = fmt.Sprintf("namespace==%q,topic==%q", Namespace, t)
	}
	return fs
}

// wakes reports whether an envelope wakes a relist: one of Topics in the
// CRI namespace (the server filters, but a runtime may ignore or misread
// filters), but for the exit of an exec's process (an exec probe's, a
// kubectl exec's: the task's id is the container's, the process's its
// own), which changes nothing a relist reads. An exit whose event does
// not decode wakes, as any other.
func wakes(env *eventsapi.Envelope) bool {
	if env.GetNamespace() != Namespace {
		return false
	}
	topic := env.GetTopic()
	for _, t := range Topics {
		if topic == t {
			return topic != topicExit || !execExit(env)
		}
	}
	return false
}

// execExit says whether an exit event is an exec's process's.
func execExit(env *eventsapi.Envelope) bool {
	var exit events.TaskExit
	if ev := env.GetEvent(); !ev.MessageIs(&exit) || proto.Unmarshal(ev.GetValue(), &exit) != nil {
		return false
	}
	return exit.GetID() != "" && exit.GetContainerID() != "" && exit.GetID() != exit.GetContainerID()
}

// Source is containerd's event service over a gRPC connection. Safe for
// concurrent use.
type Source struct {
	Conn grpc.ClientConnInterface
}

// Watch subscribes and calls wake for every envelope that wakes a relist,
// in order, until the stream ends; it returns the stream's error (ctx's
// when ctx ended it). A runtime without the service answers
// codes.Unimplemented. Nothing tells when containerd has registered the
// subscription (it sends no header before the first event), so the caller
// counts a stream that stays open a while as up.
func (s *Source) Watch(ctx context.Context, wake func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := eventsapi.NewEventsClient(s.Conn).Subscribe(ctx, &eventsapi.SubscribeRequest{Filters: filters()})
	if err != nil {
		return err
	}
	for {
		env, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if wakes(env) {
			wake()
		}
	}
}

// Dial returns a lazy connection to the runtime's socket at endpoint
// (unix:///path, as --cri-endpoint), made as the kubelet's CRI client
// makes its own: no connection is attempted before the first call.
func Dial(endpoint string) (*grpc.ClientConn, error) {
	addr, dialer, err := util.GetAddressAndDialer(endpoint)
	if err != nil {
		return nil, fmt.Errorf("runtime events %s: %w", endpoint, err)
	}
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(dialer),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: backoff.DefaultConfig.Multiplier,
				Jitter: backoff.DefaultConfig.Jitter, MaxDelay: 3 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		return nil, fmt.Errorf("runtime events %s: %w", endpoint, err)
	}
	return conn, nil
}
