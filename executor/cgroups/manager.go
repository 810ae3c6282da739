package cgroups

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// DefaultCgroupRoot is the kubelet's --cgroup-root default: the node
// cgroup is /kubepods.
const DefaultCgroupRoot = "/"

// Options configure a Manager.
type Options struct {
	// FSRoot is where the cgroup filesystems are mounted; empty means
	// DefaultFSRoot. Tests give a temporary directory laid out like it.
	FSRoot string
	// CgroupRoot is the kubelet's --cgroup-root: the node cgroup is
	// <CgroupRoot>/kubepods. Empty means DefaultCgroupRoot.
	CgroupRoot string
	// Driver names the cgroups (the runtime's cgroup driver). Required.
	Driver Driver
	// NodeMilliCPU, NodeMemory and NodePIDs size the node cgroup (its CPU
	// shares, memory limit and pids limit); 0 leaves that value alone.
	NodeMilliCPU, NodeMemory, NodePIDs int64
	// Logger; nil discards.
	Logger *slog.Logger
}

// Manager makes the pod and QoS cgroups. Safe for concurrent use.
type Manager struct {
	h        hierarchy
	driver   Driver
	node     Name
	nodeCPU  int64
	nodeMem  int64
	nodePIDs int64
	log      *slog.Logger
	mu       sync.Mutex
	qosMade  bool
	pods     map[string]*syncpodv1.Pod // pods with a cgroup, by UID
	// written is, by pod UID and resize stage, the pod whose values were
	// last written into its cgroup (absent: not known, as after a
	// restart of the executor).
	written map[string]map[string]*syncpodv1.Pod
}

// New reads the cgroup layout under the filesystem root; it creates
// nothing.
func New(o Options) (*Manager, error) {
	if o.Driver != Cgroupfs && o.Driver != Systemd {
		return nil, fmt.Errorf("cgroup driver %q: must be %q or %q", o.Driver, Cgroupfs, Systemd)
	}
	if o.FSRoot == "" {
		o.FSRoot = DefaultFSRoot
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = DefaultCgroupRoot
	}
	node := NodeName(o.CgroupRoot)
	for _, c := range node {
		if err := checkComponent(c); err != nil {
			return nil, fmt.Errorf("cgroup root %q: %w", o.CgroupRoot, err)
		}
	}
	h, err := probe(o.FSRoot)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		h: h, driver: o.Driver, node: node, nodeCPU: o.NodeMilliCPU, nodeMem: o.NodeMemory, nodePIDs: o.NodePIDs,
		log: o.Logger, pods: map[string]*syncpodv1.Pod{}, written: map[string]map[string]*syncpodv1.Pod{},
	}, nil
}

// V2 reports whether the cgroups are cgroup v2 ones.
func (m *Manager) V2() bool { return m.h.v2 }

// Driver is the driver the cgroups are named for.
func (m *Manager) Driver() Driver { return m.driver }

// NodePath is the node cgroup (<cgroup-root>/kubepods) as the driver
// spells it.
func (m *Manager) NodePath() string { return m.node.Path(m.driver) }

// Parent is the pod's cgroup as the driver spells it: the sandbox's
// cgroup_parent.
func (m *Manager) Parent(pod *syncpodv1.Pod) string {
	return PodName(m.node, podresources.QOS(pod), pod.GetUid()).Path(m.driver)
}

// Init makes the node cgroup and the two QoS cgroups with their values
// and removes the pod cgroups of pods keep says are gone: those
// an earlier run left behind. A pod cgroup that still holds a process is
// kept and reported in the error.
func (m *Manager) Init(keep func(uid string) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureQOS(); err != nil {
		return err
	}
	var errs []error
	for _, class := range []podresources.QOSClass{podresources.Guaranteed, podresources.Burstable, podresources.BestEffort} {
		dir := QOSName(m.node, class).Path(m.driver)
		names, err := m.h.list(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range names {
			uid := podUIDOf(n, m.driver)
			if uid == "" || keep(uid) {
				continue
			}
			if err := m.h.remove(dir + "/" + n); err != nil {
				errs = append(errs, err)
				continue
			}
			m.log.Info("removed the cgroup of a pod that is gone", "pod_uid", uid, "cgroup", dir+"/"+n)
		}
	}
	return errors.Join(errs...)
}

// ensureQOS makes the node and QoS cgroups once and writes their values.
func (m *Manager) ensureQOS() error {
	if !m.qosMade {
		for _, n := range []Name{m.node, QOSName(m.node, podresources.Burstable), QOSName(m.node, podresources.BestEffort)} {
			if err := m.h.create(n.Path(m.driver)); err != nil {
				return err
			}
		}
		m.qosMade = true
	}
	return m.updateQOS()
}

// updateQOS writes the QoS cgroups' values for the pods known now (the
// kubelet's UpdateQOSCgroups).
func (m *Manager) updateQOS() error {
	pods := slices.Collect(maps.Values(m.pods))
	node, burstable, bestEffort := QOSConfigs(pods, m.nodeCPU, m.nodeMem, m.nodePIDs, m.h.v2)
	if err := m.h.set(m.node.Path(m.driver), node); err != nil {
		return err
	}
	if err := m.h.set(QOSName(m.node, podresources.Burstable).Path(m.driver), burstable); err != nil {
		return err
	}
	return m.h.set(QOSName(m.node, podresources.BestEffort).Path(m.driver), bestEffort)
}

// Ensure makes the pod's cgroup with the kubelet's values unless it
// exists, after updating the QoS cgroups with the pod counted,
// and returns its path, the sandbox's cgroup_parent. Calling it for a pod
// whose cgroup exists only records the pod for the QoS reservations.
func (m *Manager) Ensure(pod *syncpodv1.Pod) (string, error) {
	if err := checkComponent(podPrefix + pod.GetUid()); err != nil || pod.GetUid() == "" {
		return "", fmt.Errorf("pod UID %q cannot name a cgroup", pod.GetUid())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rel := m.Parent(pod)
	_, known := m.pods[pod.GetUid()]
	m.pods[pod.GetUid()] = pod
	if m.h.has(rel) {
		if !known {
			return rel, m.updateQOS()
		}
		return rel, nil
	}
	if err := m.ensureQOS(); err != nil {
		return "", err
	}
	if err := m.h.create(rel); err != nil {
		return "", err
	}
	if err := m.h.set(rel, PodConfig(pod, m.h.v2)); err != nil {
		return "", err
	}
	m.wrote(pod, StageMemory, StageCPU)
	m.log.Debug("created pod cgroup", "pod_uid", pod.GetUid(), "cgroup", rel)
	return rel, nil
}

// Remove deletes the pod's cgroup, in whichever QoS class it is, and
// updates the QoS cgroups without it. A cgroup already gone counts as
// removed; one still holding a process is an error and is kept.
func (m *Manager) Remove(uid string) error {
	if uid == "" || checkComponent(podPrefix+uid) != nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, class := range []podresources.QOSClass{podresources.Guaranteed, podresources.Burstable, podresources.BestEffort} {
		if err := m.h.remove(PodName(m.node, class, uid).Path(m.driver)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	delete(m.written, uid)
	if _, ok := m.pods[uid]; ok {
		delete(m.pods, uid)
		if m.qosMade {
			return m.updateQOS()
		}
	}
	return nil
}

// Resource stages of an in-place resize, as the runner names them.
const (
	StageMemory = "memory"
	StageCPU    = "cpu"
)

// ResizeStage writes the pod cgroup's values of one resource of an
// in-place resize (StageMemory or StageCPU, R-25.2) for pod as admitted.
// With grow (before the stage's container updates) only the limits that
// rise are written, so that no container is ever held above its pod; a
// limit whose old value is not known (a cgroup made before this executor
// started) is lifted until the shrink. Without grow (after the updates)
// the stage's final values are written and the QoS cgroups follow the
// pod's new requests. A limit the pod no longer has is lifted.
func (m *Manager) ResizeStage(pod *syncpodv1.Pod, resource string, grow bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rel := m.Parent(pod)
	if !m.h.has(rel) {
		return fmt.Errorf("pod %s has no cgroup %s", pod.GetUid(), rel)
	}
	next := stage(PodConfig(pod, m.h.v2), resource)
	if !grow {
		if err := m.h.set(rel, next); err != nil {
			return err
		}
		m.wrote(pod, resource)
		m.pods[pod.GetUid()] = pod
		return m.updateQOS()
	}
	prev, known := m.written[pod.GetUid()][resource]
	var cur Config
	if known {
		cur = stage(PodConfig(prev, m.h.v2), resource)
	}
	return m.h.set(rel, grown(cur, next, known))
}

// stage is the part of c one resource stage writes, limits made explicit:
// a limit c leaves unset is -1 (none).
func stage(c Config, resource string) Config {
	none := int64(-1)
	limit := func(v *int64) *int64 {
		if v == nil || *v <= 0 {
			return &none
		}
		return v
	}
	switch resource {
	case StageMemory:
		return Config{Memory: limit(c.Memory), Unified: c.Unified}
	case StageCPU:
		period := uint64(QuotaPeriod)
		if c.CPUPeriod != nil {
			period = *c.CPUPeriod
		}
		return Config{CPUShares: c.CPUShares, CPUQuota: limit(c.CPUQuota), CPUPeriod: &period}
	}
	return Config{}
}

// grown is what a stage writes before its containers change: each limit
// of next that is above cur (none counting as the highest), or none where
// cur is not known; nothing else.
func grown(cur, next Config, known bool) Config {
	up := func(c, n *int64) *int64 {
		switch {
		case n == nil:
			return nil
		case !known:
			none := int64(-1)
			return &none
		case c != nil && *c < 0: // no limit now: it stays until the shrink
			return nil
		case *n < 0 || *n > *c:
			return n
		}
		return nil
	}
	out := Config{Memory: up(cur.Memory, next.Memory), CPUQuota: up(cur.CPUQuota, next.CPUQuota)}
	if out.CPUQuota != nil {
		// cgroup v2 writes quota and period together (cpu.max).
		out.CPUPeriod = next.CPUPeriod
	}
	return out
}

// wrote records that pod's values of the stages were written.
func (m *Manager) wrote(pod *syncpodv1.Pod, stages ...string) {
	w := m.written[pod.GetUid()]
	if w == nil {
		w = map[string]*syncpodv1.Pod{}
		m.written[pod.GetUid()] = w
	}
	for _, s := range stages {
		w[s] = pod
	}
}
