// Command applyfloor is the floor of `syncpodctl apply`: a process that
// only dials a planner and sends one ApplyPod request, read already
// encoded from a file. BenchmarkApplyExec times syncpodctl against it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: applyfloor unix:///planner.sock REQUEST.pb")
		os.Exit(2)
	}
	if err := apply(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "applyfloor:", err)
		os.Exit(1)
	}
}

func apply(target, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	req := &plannerv1.ApplyPodRequest{}
	if err := proto.Unmarshal(data, req); err != nil {
		return err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := plannerv1.NewPlannerServiceClient(conn).ApplyPod(ctx, req)
	if err != nil {
		return err
	}
	fmt.Printf("pod/%s created\n", resp.GetPod().GetName())
	return nil
}
