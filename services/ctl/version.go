package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/server/access"
)

func newVersion(g *globals) *cobra.Command {
	var (
		clientOnly bool
		output     string
	)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "The client's version and each server's (planner, executor, PLEG, runtime)",
		Long: "Print the client's version and, asked of the planner, its own and those of the\n" +
			"executor and PLEG it is configured with, with the CRI runtime each talks to.\n" +
			"Exits 1 when a server cannot be asked.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return usagef("-o %q: want json or yaml", output)
			}
			return runVersion(cmd.Context(), g, clientOnly, output)
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "only the client version")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output: json or yaml")
	return cmd
}

// versionInfo is what version -o json|yaml prints: the client's build
// and the planner's GetVersion answer as it is on the wire (protojson).
type versionInfo struct {
	Client  json.RawMessage `json:"clientVersion"`
	Servers json.RawMessage `json:"serverVersions,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func runVersion(ctx context.Context, g *globals, clientOnly bool, output string) error {
	client := &syncpodv1.ComponentVersion{Component: "syncpodctl", Version: access.Version, GoVersion: goVersion(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var (
		resp   *syncpodv1.GetVersionResponse
		askErr error
	)
	if !clientOnly {
		resp, askErr = askVersion(ctx, g)
	}
	failed := askErr != nil
	if resp != nil {
		resp.GetServer().Address = g.server
		for _, p := range resp.GetPeers() {
			failed = failed || p.GetError() != ""
		}
	}
	if output != "" {
		info := versionInfo{}
		info.Client, _ = protojson.Marshal(client)
		if resp != nil {
			info.Servers, _ = protojson.Marshal(resp)
		}
		if askErr != nil {
			info.Error = fmt.Sprintf("planner at %s: %v", g.server, askErr)
		}
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		if output == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
		} else {
			b = append(b, '\n')
		}
		if _, err := g.env.Stdout.Write(b); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.env.Stdout, "Client Version: %s\n", describeBuild(client))
		if askErr != nil {
			fmt.Fprintf(g.env.Stdout, "Planner Version: unknown: cannot ask it at %s: %s\n", g.server, status.Convert(askErr).Message())
		}
		if resp != nil {
			for _, v := range append([]*syncpodv1.ComponentVersion{resp.GetServer()}, resp.GetPeers()...) {
				fmt.Fprintf(g.env.Stdout, "%s Version: %s\n", componentTitle(v.GetComponent()), describeBuild(v))
			}
		}
	}
	if failed {
		return exitError{exitFailure}
	}
	return nil
}

// askVersion asks the planner's VersionService, which asks its peers.
func askVersion(ctx context.Context, g *globals) (*syncpodv1.GetVersionResponse, error) {
	conn, closer, err := g.env.Dial(g.server)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
	defer cancel()
	return syncpodv1.NewVersionServiceClient(conn).GetVersion(ctx, &syncpodv1.GetVersionRequest{})
}

// describeBuild is one component's line: version, Go and platform,
// address, the runtime it talks to, or why it could not be asked.
func describeBuild(v *syncpodv1.ComponentVersion) string {
	if v.GetError() != "" && v.GetVersion() == "" {
		return fmt.Sprintf("unknown: cannot ask it at %s: %s", v.GetAddress(), v.GetError())
	}
	s := fmt.Sprintf("%s (%s, %s)", v.GetVersion(), v.GetGoVersion(), v.GetPlatform())
	if v.GetAddress() != "" {
		s += " at " + v.GetAddress()
	}
	if rt := v.GetRuntime(); rt != nil {
		if rt.GetError() != "" {
			s += "; runtime: unknown: " + rt.GetError()
		} else {
			s += fmt.Sprintf("; runtime %s %s (CRI %s)", rt.GetName(), rt.GetVersion(), rt.GetApiVersion())
		}
	}
	if v.GetError() != "" {
		s += "; " + v.GetError()
	}
	return s
}

func componentTitle(c string) string {
	switch c {
	case "pleg":
		return "PLEG"
	case "":
		return "Unknown"
	}
	return strings.ToUpper(c[:1]) + c[1:]
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.GoVersion != "" {
		return bi.GoVersion
	}
	return runtime.Version()
}
