package ctl

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

func newLogs(g *globals) *cobra.Command {
	var container, logDir string
	var previous bool
	cmd := &cobra.Command{
		Use:   "logs POD [CONTAINER] [-c CONTAINER]",
		Short: "Print a container's log",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("usage: logs POD [-c CONTAINER]")
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			return g.completePods(args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pod, err := podArg(args[0])
			if err != nil {
				return err
			}
			if len(args) == 2 {
				if container != "" && container != args[1] {
					return usagef("container named twice: %q and -c %q", args[1], container)
				}
				container = args[1]
			}
			rec, err := g.getPod(cmd.Context(), g.namespace, pod)
			if err != nil {
				return err
			}
			p := rec.GetPod()
			if container == "" {
				names := containerNames(rec)
				if len(names) != 1 {
					return usagef("a container name must be specified for pod %s, choose one of: %v", pod, names)
				}
				container = names[0]
			}
			dir := filepath.Join(logDir, fmt.Sprintf("%s_%s_%s", namespaceOf(p), p.GetName(), p.GetUid()), container)
			file, err := pickLog(dir, previous)
			if err != nil {
				return err
			}
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			defer f.Close()
			return copyCRILog(g.env.Stdout, f)
		},
	}
	defaultLogDir := g.env.Getenv("SYNCPOD_LOG_DIR")
	if defaultLogDir == "" {
		defaultLogDir = "/var/log/pods"
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "the container (needed when the pod has several)")
	cmd.Flags().BoolVarP(&previous, "previous", "p", false, "the previous instance's log")
	cmd.Flags().StringVar(&logDir, "log-dir", defaultLogDir, "the executor's pod log directory (SYNCPOD_LOG_DIR)")
	return cmd
}

// pickLog returns the newest (or second newest) <restart>.log in dir.
func pickLog(dir string, previous bool) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", notFound("no logs at %s: %v", dir, err)
	}
	var counts []int
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log")); err == nil && strings.HasSuffix(e.Name(), ".log") {
			counts = append(counts, n)
		}
	}
	slices.Sort(counts)
	want := len(counts) - 1
	if previous {
		want--
	}
	if want < 0 {
		return "", notFound("no %slog in %s", map[bool]string{true: "previous ", false: ""}[previous], dir)
	}
	return filepath.Join(dir, strconv.Itoa(counts[want])+".log"), nil
}

// copyCRILog prints the messages of a CRI-format log
// ("<time> <stream> <P|F> <message>"), joining partial lines.
func copyCRILog(w io.Writer, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) < 3 {
			continue
		}
		msg := ""
		if len(parts) == 4 {
			msg = parts[3]
		}
		if parts[2] == "P" {
			fmt.Fprint(w, msg)
		} else {
			fmt.Fprintln(w, msg)
		}
	}
	return sc.Err()
}

// containerNames lists a pod's containers, init containers first.
func containerNames(r *plannerv1.PodRecord) []string {
	var names []string
	for _, c := range r.GetPod().GetSpec().GetInitContainers() {
		names = append(names, c.GetName())
	}
	for _, c := range r.GetPod().GetSpec().GetContainers() {
		names = append(names, c.GetName())
	}
	return names
}
