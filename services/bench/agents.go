package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Via is how pods are asked for.
type Via string

// Ways in.
const (
	ViaAPI  Via = "api"
	ViaFile Via = "file"
)

// Command of every benchmark container: a shell that ignores SIGTERM (it
// is PID 1), so a deletion takes the whole grace period, as with many
// real programs.
var Command = []string{"sh", "-c", "while true; do sleep 1; done"}

// GracePeriod of every benchmark pod, seconds.
const GracePeriod = 2

// Namespace of every benchmark pod.
const Namespace = "default"

// Agent is what turns desired pods into containers.
type Agent interface {
	// Name is "syncpod", "kubelet" or "cri".
	Name() string
	// Vias are the ways in it offers.
	Vias() []Via
	// Apply asks for pods named names; Delete for their removal.
	Apply(ctx context.Context, names []string, via Via) error
	Delete(ctx context.Context, names []string, via Via) error
	// SandboxName is the name the runtime sees for pod name.
	SandboxName(name string) string
}

// FileAgent asks for pods by writing Kubernetes manifests into Dir (the
// kubelet's staticPodPath, syncpod's --manifest-dir): written beside it
// and renamed in, so a watcher never reads half a file.
type FileAgent struct {
	Dir, Image string
}

func (f FileAgent) write(names []string) error {
	stage := filepath.Join(filepath.Dir(filepath.Clean(f.Dir)), ".bench-staging")
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return err
	}
	for _, n := range names {
		tmp := filepath.Join(stage, n+".yaml")
		if err := os.WriteFile(tmp, []byte(Manifest(n, f.Image)), 0o600); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(stage, n+".yaml"), filepath.Join(f.Dir, n+".yaml")); err != nil {
			return err
		}
	}
	return nil
}

func (f FileAgent) remove(names []string) error {
	for _, n := range names {
		if err := os.Remove(filepath.Join(f.Dir, n+".yaml")); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// Manifest is the Kubernetes Pod manifest of benchmark pod name.
func Manifest(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", "while true; do sleep 1; done"]
`, name, Namespace, GracePeriod, image)
}

// Kubelet is the kubelet standalone with static pods: file only; its
// sandboxes are named <pod>-<node>.
type Kubelet struct {
	FileAgent
	Node string
}

// Name implements Agent.
func (Kubelet) Name() string { return "kubelet" }

// Vias implements Agent.
func (Kubelet) Vias() []Via { return []Via{ViaFile} }

// Apply implements Agent.
func (k Kubelet) Apply(_ context.Context, names []string, _ Via) error { return k.write(names) }

// Delete implements Agent.
func (k Kubelet) Delete(_ context.Context, names []string, _ Via) error { return k.remove(names) }

// SandboxName implements Agent.
func (k Kubelet) SandboxName(name string) string { return name + "-" + k.Node }

// Syncpod is syncpod through the planner's API or its manifest directory.
type Syncpod struct {
	FileAgent
	Planner plannerv1.PlannerServiceClient
}

// Name implements Agent.
func (Syncpod) Name() string { return "syncpod" }

// Vias implements Agent.
func (Syncpod) Vias() []Via { return []Via{ViaAPI, ViaFile} }

// Apply implements Agent: API pods are applied in parallel, as clients
// would.
func (s Syncpod) Apply(ctx context.Context, names []string, via Via) error {
	if via == ViaFile {
		return s.write(names)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, n := range names {
		g.Go(func() error {
			_, err := s.Planner.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: SyncpodPod(n, s.Image)})
			return err
		})
	}
	return g.Wait()
}

// Delete implements Agent.
func (s Syncpod) Delete(ctx context.Context, names []string, via Via) error {
	if via == ViaFile {
		return s.remove(names)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, n := range names {
		g.Go(func() error {
			_, err := s.Planner.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Namespace: Namespace, Name: n}})
			return err
		})
	}
	return g.Wait()
}

// SandboxName implements Agent.
func (Syncpod) SandboxName(name string) string { return name }

// SyncpodPod is benchmark pod name as syncpod's API takes it.
func SyncpodPod(name, image string) *syncpodv1.Pod {
	g := int64(GracePeriod)
	return &syncpodv1.Pod{Name: name, Namespace: Namespace, Spec: &syncpodv1.PodSpec{
		HostNetwork: true, TerminationGracePeriodSeconds: &g,
		Containers: []*syncpodv1.Container{{Name: "app", Image: image, Command: Command,
			ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}},
	}}
}

// RawCRI is the floor: a tiny CRI client doing RunPodSandbox, image
// status, CreateContainer and StartContainer itself, pods in parallel.
type RawCRI struct {
	RT     *Runtime
	Image  string
	LogDir string

	mu        sync.Mutex
	sandboxes map[string]string // name → sandbox id
	calls     map[string]Sample // CRI call → durations
}

// timed runs one CRI call and records how long it took under op.
func (c *RawCRI) timed(op string, call func() error) error {
	t0 := time.Now()
	err := call()
	d := time.Since(t0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]Sample{}
	}
	s := c.calls[op]
	s.Add(d)
	c.calls[op] = s
	return err
}

// CallSummary is the median duration of each CRI call the agent made to
// start pods, in the order it makes them.
func (c *RawCRI) CallSummary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, op := range []string{"RunPodSandbox", "ImageStatus", "CreateContainer", "StartContainer"} {
		if s := c.calls[op]; len(s) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", op, fmtDur(s.Quantile(0.5))))
		}
	}
	return strings.Join(parts, ", ")
}

// Name implements Agent.
func (*RawCRI) Name() string { return "cri" }

// Vias implements Agent.
func (*RawCRI) Vias() []Via { return []Via{ViaAPI} }

// SandboxName implements Agent.
func (*RawCRI) SandboxName(name string) string { return name }

// Apply implements Agent.
func (c *RawCRI) Apply(ctx context.Context, names []string, _ Via) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, n := range names {
		g.Go(func() error { return c.start(ctx, n) })
	}
	return g.Wait()
}

func (c *RawCRI) start(ctx context.Context, name string) error {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: Namespace, Uid: "bench-" + name},
		LogDirectory: filepath.Join(c.LogDir, name),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: floorNamespaces(),
		}},
	}
	var id string
	err := c.timed("RunPodSandbox", func() (err error) {
		id, err = c.RT.RS.RunPodSandbox(ctx, cfg, "")
		return err
	})
	if err != nil {
		return fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	c.mu.Lock()
	if c.sandboxes == nil {
		c.sandboxes = map[string]string{}
	}
	c.sandboxes[name] = id
	c.mu.Unlock()
	var img *runtimeapi.ImageStatusResponse
	err = c.timed("ImageStatus", func() (err error) {
		img, err = c.RT.IS.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
		return err
	})
	if err != nil || img.GetImage() == nil {
		return fmt.Errorf("ImageStatus %s: %v (missing: %t)", c.Image, err, img.GetImage() == nil)
	}
	var cid string
	err = c.timed("CreateContainer", func() (err error) {
		cid, err = c.RT.RS.CreateContainer(ctx, id, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: c.Image}, Command: Command, LogPath: "app.log",
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: floorNamespaces(),
			}},
		}, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	if err := c.timed("StartContainer", func() error { return c.RT.RS.StartContainer(ctx, cid) }); err != nil {
		return fmt.Errorf("StartContainer %s: %w", name, err)
	}
	return nil
}

// StopGracefully is the floor of a deletion, the kubelet's kill order
// done directly: every pod's containers stopped in parallel with the
// grace period, then each pod's sandbox stopped; the sandboxes stay (the
// caller's Delete removes them).
func (c *RawCRI) StopGracefully(ctx context.Context, names []string) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, n := range names {
		c.mu.Lock()
		id := c.sandboxes[n]
		c.mu.Unlock()
		if id == "" {
			continue
		}
		g.Go(func() error {
			cs, err := c.RT.RS.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: id})
			if err != nil {
				return err
			}
			cg, cctx := errgroup.WithContext(ctx)
			for _, ctr := range cs {
				if ctr.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
					cg.Go(func() error { return c.RT.RS.StopContainer(cctx, ctr.GetId(), GracePeriod) })
				}
			}
			if err := cg.Wait(); err != nil {
				return err
			}
			return c.RT.RS.StopPodSandbox(ctx, id)
		})
	}
	return g.Wait()
}

// floorNamespaces are the namespaces the kubelet (and syncpod) give a
// host-network pod: the node's network, one PID namespace per container.
// The PID namespace matters: in a shared one the benchmark's shell is
// not PID 1 and dies at SIGTERM, where the agents' wait out the grace
// period.
func floorNamespaces() *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
}

// Delete implements Agent.
func (c *RawCRI) Delete(ctx context.Context, names []string, _ Via) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, n := range names {
		c.mu.Lock()
		id := c.sandboxes[n]
		delete(c.sandboxes, n)
		c.mu.Unlock()
		if id == "" {
			continue
		}
		g.Go(func() error {
			if err := c.RT.RS.StopPodSandbox(ctx, id); err != nil {
				return err
			}
			return c.RT.RS.RemovePodSandbox(ctx, id)
		})
	}
	return g.Wait()
}
