package plannerclient

import (
	"context"
	"errors"
	"io"

	"github.com/syncpod/syncpod/internal/chunkio"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// PortForward carries one connection, conn, to port of pod through the
// planner's PortForward stream, the way every planner client forwards a
// port (syncpodctl port-forward, the node agent's streaming server): the
// start message, then conn's bytes up and the stream's bytes down until
// the planner ends the stream (nil) or either side fails (that error).
// conn is closed on return.
func PortForward(ctx context.Context, client plannerv1.PlannerServiceClient, pod *plannerv1.PodRef, port int32, conn io.ReadWriteCloser) error {
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.PortForward(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&plannerv1.PortForwardRequest{Start: &plannerv1.PortForwardStart{Pod: pod, Port: port}}); err != nil {
		return sendErr(stream, err)
	}
	go func() {
		if chunkio.Pump(conn, func(b []byte) error { return stream.Send(&plannerv1.PortForwardRequest{Data: b}) }) {
			_ = stream.CloseSend()
		}
	}()
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := conn.Write(msg.GetData()); err != nil {
			return err
		}
	}
}
