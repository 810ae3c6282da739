package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/runner"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Via is how pods are asked for.
type Via string

// Ways in.
const (
	ViaAPI  Via = "api"
	ViaFile Via = "file"
	// ViaCLI runs `syncpodctl apply -f` on a manifest file, a process a
	// pod, as a user would (syncpod with Syncpod.CLI set, single starts
	// only).
	ViaCLI Via = "cli"
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

// Syncpod is syncpod through the planner's API or its manifest directory,
// or through syncpodctl when CLI is set.
type Syncpod struct {
	FileAgent
	Planner plannerv1.PlannerServiceClient
	// CLI is the syncpodctl command that ViaCLI runs, its arguments
	// "apply -f FILE" appended (e.g. bin/syncpodctl --server
	// unix:///path/planner.sock); empty: no ViaCLI.
	CLI []string
}

// Name implements Agent.
func (Syncpod) Name() string { return "syncpod" }

// Vias implements Agent.
func (s Syncpod) Vias() []Via {
	if len(s.CLI) > 0 {
		return []Via{ViaAPI, ViaFile, ViaCLI}
	}
	return []Via{ViaAPI, ViaFile}
}

// Apply implements Agent: API pods are applied in parallel, as clients
// would; by CLI each pod's manifest is written beside the manifest
// directory, then applied by one syncpodctl process of its own.
func (s Syncpod) Apply(ctx context.Context, names []string, via Via) error {
	switch via {
	case ViaFile:
		return s.write(names)
	case ViaCLI:
		return eachName(ctx, names, s.applyCLI)
	}
	return eachName(ctx, names, func(ctx context.Context, n string) error {
		_, err := s.Planner.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: SyncpodPod(n, s.Image)})
		return err
	})
}

// applyCLI runs syncpodctl apply on pod name's manifest.
func (s Syncpod) applyCLI(ctx context.Context, name string) error {
	dir := filepath.Join(filepath.Dir(filepath.Clean(s.Dir)), ".bench-cli")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(f, []byte(Manifest(name, s.Image)), 0o600); err != nil {
		return err
	}
	args := append(slices.Clone(s.CLI[1:]), "apply", "-f", f)
	if out, err := exec.CommandContext(ctx, s.CLI[0], args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", s.CLI[0], strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Delete implements Agent: a pod applied by CLI is deleted through the API.
func (s Syncpod) Delete(ctx context.Context, names []string, via Via) error {
	if via == ViaFile {
		return s.remove(names)
	}
	return eachName(ctx, names, func(ctx context.Context, n string) error {
		_, err := s.Planner.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Namespace: Namespace, Name: n}})
		return err
	})
}

// eachName calls fn for every name, up to 16 at a time, as clients
// would, until all are done or one fails (its error; the others' ctx is
// then cancelled).
func eachName(ctx context.Context, names []string, fn func(ctx context.Context, name string) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, n := range names {
		g.Go(func() error { return fn(ctx, n) })
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
	sandboxes map[string]string                       // name → sandbox id
	configs   map[string]*runtimeapi.PodSandboxConfig // name → its sandbox's config
	running   map[string]string                       // container id → pod name, while it runs
	attempts  map[string]uint32                       // name → its container's attempt
	calls     map[string]Sample                       // CRI call → durations
	replErr   error                                   // the first replacement that failed
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
	return c.callSummary("", "RunPodSandbox", "ImageStatus", "CreateContainer", "StartContainer")
}

// ReplaceSummary is CallSummary for the replacements FollowReplacements
// made.
func (c *RawCRI) ReplaceSummary() string {
	return c.callSummary(ReplacePrefix, "CreateContainer", "StartContainer")
}

func (c *RawCRI) callSummary(prefix string, ops ...string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, op := range ops {
		if s := c.calls[prefix+op]; len(s) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", op, FormatDuration(s.Quantile(0.5))))
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
	cfg := c.sandboxConfig(name)
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
		c.sandboxes, c.configs, c.running, c.attempts = map[string]string{}, map[string]*runtimeapi.PodSandboxConfig{}, map[string]string{}, map[string]uint32{}
	}
	c.sandboxes[name], c.configs[name] = id, cfg
	c.mu.Unlock()
	var img *runtimeapi.ImageStatusResponse
	err = c.timed("ImageStatus", func() (err error) {
		img, err = c.RT.IS.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
		return err
	})
	if err != nil || img.GetImage() == nil {
		return fmt.Errorf("ImageStatus %s: %v (missing: %t)", c.Image, err, img.GetImage() == nil)
	}
	return c.createStart(ctx, name, id, cfg, 0, "")
}

// createStart creates and starts pod name's container (attempt), timing
// the calls under prefix + their names, and records it as running.
func (c *RawCRI) createStart(ctx context.Context, name, sandboxID string, cfg *runtimeapi.PodSandboxConfig, attempt uint32, prefix string) error {
	ccfg, err := c.containerConfig(name, attempt)
	if err != nil {
		return fmt.Errorf("container config %s: %w", name, err)
	}
	var cid string
	err = c.timed(prefix+"CreateContainer", func() (err error) {
		cid, err = c.RT.RS.CreateContainer(ctx, sandboxID, ccfg, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	if err := c.timed(prefix+"StartContainer", func() error { return c.RT.RS.StartContainer(ctx, cid) }); err != nil {
		return fmt.Errorf("StartContainer %s: %w", name, err)
	}
	c.mu.Lock()
	c.running[cid], c.attempts[name] = name, attempt
	c.mu.Unlock()
	return nil
}

// ReplacePrefix names the CRI calls of the floor's replacements in
// CallSummary's records.
const ReplacePrefix = "replace "

// FollowReplacements makes the floor an evented agent for its own pods:
// it follows the runtime's CRI events and, the moment one says a
// container of its pods stopped, creates and starts the replacement
// (CreateContainer, StartContainer; the image is known). That is the
// least any agent reacting to the runtime's events can do, so it is the
// floor of "stopped → replacement started". It returns once the runtime
// accepted the event stream; the following ends with ctx.
func (c *RawCRI) FollowReplacements(ctx context.Context) error {
	ch, errc, err := c.RT.events(ctx)
	if err != nil {
		return err
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-errc:
				// No more replacements: say why, for the wait that misses one.
				c.mu.Lock()
				if c.replErr == nil && ctx.Err() == nil {
					c.replErr = fmt.Errorf("the runtime's CRI event stream ended: %v", err)
				}
				c.mu.Unlock()
				return
			case ev := <-ch:
				if ev.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
					continue
				}
				c.mu.Lock()
				name, ok := c.running[ev.GetContainerId()]
				delete(c.running, ev.GetContainerId())
				id, cfg, attempt := c.sandboxes[name], c.configs[name], c.attempts[name]+1
				c.mu.Unlock()
				if !ok || id == "" {
					continue
				}
				go func() {
					if err := c.createStart(ctx, name, id, cfg, attempt, ReplacePrefix); err != nil && ctx.Err() == nil {
						c.mu.Lock()
						if c.replErr == nil {
							c.replErr = err
						}
						c.mu.Unlock()
					}
				}()
			}
		}
	}()
	return nil
}

// ReplaceErr is the first replacement that failed, if any.
func (c *RawCRI) ReplaceErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replErr
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
		c.forgetRunning(n) // stopped on purpose: not to be replaced
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

// forgetRunning drops pod name's containers from the running ones, so
// stopping them on purpose starts no replacement. c.mu is held.
func (c *RawCRI) forgetRunning(name string) {
	for id, n := range c.running {
		if n == name {
			delete(c.running, id)
		}
	}
}

// floorPod is the benchmark pod as the floor runs it: the agents' pod,
// with a UID of its own.
func (c *RawCRI) floorPod(name string) *syncpodv1.Pod {
	p := SyncpodPod(name, c.Image)
	p.Uid = "bench-" + name
	return p
}

// sandboxConfig is the sandbox config syncpod's executor sends for the
// benchmark pod (the kubelet's: its namespaces, RuntimeDefault seccomp for
// the sandbox, the node's DNS, the log directory), built by the executor's
// own code, so the floor asks the runtime for the same work. Only the
// labels and annotations are left out: they cost the runtime nothing
// measurable, and syncpod's labels would make its PLEG, which shares the
// runtime in the paired rows, take the floor's pods for its own.
func (c *RawCRI) sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	pod := c.floorPod(name)
	cfg := runner.SandboxConfig(pod, 0, c.LogDir)
	resolv, _ := os.ReadFile("/etc/resolv.conf") // the executor's default; unreadable counts as empty there too
	cfg.DnsConfig = runner.DNSConfig(pod, resolv)
	cfg.Labels, cfg.Annotations = nil, nil
	return cfg
}

// containerConfig is, likewise, the container config syncpod's executor
// sends for instance attempt of the benchmark container, with the node's
// settings it starts with by default (no seccompDefault, the host's
// AppArmor, the machine's memory) and the kubelet's two default mounts: a
// hosts file for the host-network pod and a fresh termination-log file,
// written under LogDir as the executor writes them under its pod
// directory.
func (c *RawCRI) containerConfig(name string, attempt uint32) (*runtimeapi.ContainerConfig, error) {
	pod := c.floorPod(name)
	ctr := pod.GetSpec().GetContainers()[0]
	dir := filepath.Join(c.LogDir, "floor-files", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	hostHosts, _ := os.ReadFile("/etc/hosts")
	hosts := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(hosts, runner.HostsFile(pod, nil, hostHosts), 0o644); err != nil {
		return nil, err
	}
	termLog := filepath.Join(dir, fmt.Sprintf("termination-log-%d", attempt))
	if err := os.WriteFile(termLog, nil, 0o666); err != nil {
		return nil, err
	}
	cfg, err := runner.ContainerConfig(pod, ctr, false, "", int32(attempt), runner.ContainerOptions{
		Security:       runner.SecurityOptions{AppArmorEnabled: runner.HostAppArmorEnabled()},
		MemoryCapacity: runner.MachineMemory(),
		Mounts:         runner.DefaultMounts(ctr, nil, hosts, termLog),
	})
	if err != nil {
		return nil, err
	}
	cfg.Labels, cfg.Annotations = nil, nil
	return cfg, nil
}

// Delete implements Agent.
func (c *RawCRI) Delete(ctx context.Context, names []string, _ Via) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, n := range names {
		c.mu.Lock()
		id := c.sandboxes[n]
		delete(c.sandboxes, n)
		delete(c.configs, n)
		delete(c.attempts, n)
		c.forgetRunning(n)
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
