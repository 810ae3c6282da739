package node

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Host is what the Node object says about the machine. ReadHost fills it
// from the host; tests build it by hand.
type Host struct {
	// Hostname is the machine's host name (the Hostname address).
	Hostname string
	// InternalIP is the node's address (the InternalIP address, hostIP of
	// its pods).
	InternalIP string
	// CPUs is the number of logical CPUs.
	CPUs int64
	// MemoryBytes is the physical memory (MemTotal).
	MemoryBytes int64
	// EphemeralStorageBytes is the size of the filesystem holding the node's
	// data.
	EphemeralStorageBytes int64
	// MaxPods is the pods capacity.
	MaxPods int64
	// MachineID, BootID, KernelVersion and OSImage are node info.
	MachineID, SystemUUID, BootID, KernelVersion, OSImage string
	// RuntimeVersion is "name://version" of the CRI runtime, or "" when
	// unknown.
	RuntimeVersion string
	// RuntimeHandlers are the CRI runtime's handlers and their features
	// (status.runtimeHandlers); nil when unknown.
	RuntimeHandlers []corev1.NodeRuntimeHandler
	// AgentVersion is reported as the kubelet version.
	AgentVersion string
	// KubeletPort is the port of the read API (logs, exec) on InternalIP,
	// published as daemonEndpoints.kubeletEndpoint; 0 when not served.
	KubeletPort int32
}

// ReadHost reads the host's facts: CPUs, MemTotal from /proc/meminfo, the
// size of the filesystem of storageDir, ids from /etc/machine-id and
// /proc/sys/kernel/random/boot_id, the kernel release and the OS image
// from /etc/os-release. Facts that cannot be read stay empty or zero.
func ReadHost(storageDir string) Host {
	h := Host{CPUs: int64(runtime.NumCPU())}
	h.Hostname, _ = os.Hostname()
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) >= 2 && fields[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
					h.MemoryBytes = kb * 1024
				}
			}
		}
		_ = f.Close()
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(storageDir, &fs); err == nil {
		h.EphemeralStorageBytes = int64(fs.Blocks) * fs.Bsize
	}
	h.MachineID = readTrim("/etc/machine-id")
	h.SystemUUID = readTrim("/sys/class/dmi/id/product_uuid")
	h.BootID = readTrim("/proc/sys/kernel/random/boot_id")
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		h.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	}
	h.OSImage = "Linux"
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				h.OSImage = strings.Trim(v, `"`)
			}
		}
	}
	return h
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// DefaultIP is the first global unicast IPv4 address of the host, or
// 127.0.0.1 when it has none.
func DefaultIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// RuntimeVersion asks the CRI runtime at endpoint (unix:///path) for its
// name and version, as "name://version" (the Node's
// containerRuntimeVersion).
func RuntimeVersion(ctx context.Context, endpoint string) (string, error) {
	var out string
	err := withRuntime(ctx, endpoint, func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) error {
		v, err := rs.Version(ctx, &runtimeapi.VersionRequest{})
		if err != nil {
			return fmt.Errorf("CRI Version at %s: %w", endpoint, err)
		}
		out = v.GetRuntimeName() + "://" + v.GetRuntimeVersion()
		return nil
	})
	return out, err
}

// RuntimeHandlers asks the CRI runtime at endpoint for its handlers and
// their features, as the kubelet reports them in the Node's
// status.runtimeHandlers: whether each runs user namespaces
// and recursive read-only mounts.
func RuntimeHandlers(ctx context.Context, endpoint string) ([]corev1.NodeRuntimeHandler, error) {
	var out []corev1.NodeRuntimeHandler
	err := withRuntime(ctx, endpoint, func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) error {
		st, err := rs.Status(ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			return fmt.Errorf("CRI Status at %s: %w", endpoint, err)
		}
		out = HandlersOf(st)
		return nil
	})
	return out, err
}

// HandlersOf is the Node's status.runtimeHandlers from a CRI Status.
func HandlersOf(st *runtimeapi.StatusResponse) []corev1.NodeRuntimeHandler {
	out := make([]corev1.NodeRuntimeHandler, 0, len(st.GetRuntimeHandlers()))
	for _, h := range st.GetRuntimeHandlers() {
		rro, userns := h.GetFeatures().GetRecursiveReadOnlyMounts(), h.GetFeatures().GetUserNamespaces()
		out = append(out, corev1.NodeRuntimeHandler{Name: h.GetName(),
			Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns}})
	}
	return out
}

// withRuntime calls fn with a client of the CRI runtime at endpoint, for
// at most 10 s.
func withRuntime(ctx context.Context, endpoint string, fn func(context.Context, runtimeapi.RuntimeServiceClient) error) error {
	target := endpoint
	if p, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		target = "unix://" + p
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return fn(ctx, runtimeapi.NewRuntimeServiceClient(conn))
}

// Condition types and reasons the node reports.
const (
	reasonReady         = "KubeletReady"
	reasonNotReady      = "KubeletNotReady"
	reasonNoPressure    = "KubeletHasSufficientMemory"
	reasonNoDisk        = "KubeletHasNoDiskPressure"
	reasonNoPIDPressure = "KubeletHasSufficientPID"
	reasonMemPressure   = "KubeletHasInsufficientMemory"
	reasonDiskPressure  = "KubeletHasDiskPressure"
	reasonPIDPressure   = "KubeletHasInsufficientPID"
)

// NodeLabels are the well-known labels the node carries, plus extra
// (extra wins).
func NodeLabels(name string, extra map[string]string) map[string]string {
	l := map[string]string{
		corev1.LabelHostname:    name,
		corev1.LabelOSStable:    runtime.GOOS,
		corev1.LabelArchStable:  runtime.GOARCH,
		"node.syncpod.io/agent": "syncpod-node",
	}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// NodeStatus is the Node's status for host h at now. ready says whether
// the planner answers (why says why not); pr the pressure conditions.
// Conditions whose status did not change keep their lastTransitionTime
// from prev.
func NodeStatus(h Host, ready bool, why string, pr Pressure, prev *corev1.NodeStatus, now time.Time) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(h.CPUs, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(h.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(h.MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(h.EphemeralStorageBytes, resource.BinarySI),
	}
	runtimeVersion := h.RuntimeVersion
	if runtimeVersion == "" {
		runtimeVersion = "unknown://unknown"
	}
	ts := metav1.NewTime(now.Truncate(time.Second))
	readyStatus, readyReason, readyMsg := corev1.ConditionTrue, reasonReady, "syncpod node agent is posting ready status"
	if !ready {
		readyStatus, readyReason, readyMsg = corev1.ConditionFalse, reasonNotReady, why
	}
	// the planner's eviction manager decides the conditions and
	// words them; its reasons and messages are shown as they are.
	cond := func(typ corev1.NodeConditionType, under bool, okReason, okMsg, badReason, badMsg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: typ, Status: corev1.ConditionFalse, Reason: okReason, Message: okMsg}
		if under {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, badReason, badMsg
		}
		if pc := pr.condition(typ); pc != nil && pc.GetStatus() == under && pc.GetReason() != "" {
			c.Reason, c.Message = pc.GetReason(), pc.GetMessage()
		}
		return c
	}
	conds := []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, pr.Memory, reasonNoPressure, "syncpod has sufficient memory available",
			reasonMemPressure, "syncpod has insufficient memory available"),
		cond(corev1.NodeDiskPressure, pr.Disk, reasonNoDisk, "syncpod has no disk pressure",
			reasonDiskPressure, "syncpod has disk pressure"),
		cond(corev1.NodePIDPressure, pr.PID, reasonNoPIDPressure, "syncpod has sufficient PID available",
			reasonPIDPressure, "syncpod has insufficient PID available"),
		{Type: corev1.NodeReady, Status: readyStatus, Reason: readyReason, Message: readyMsg},
	}
	for i := range conds {
		conds[i].LastHeartbeatTime = ts
		conds[i].LastTransitionTime = ts
		if prev == nil {
			continue
		}
		for _, p := range prev.Conditions {
			if p.Type == conds[i].Type && p.Status == conds[i].Status && !p.LastTransitionTime.IsZero() {
				conds[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	addrs := []corev1.NodeAddress{}
	if h.InternalIP != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: h.InternalIP})
	}
	if h.Hostname != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: h.Hostname})
	}
	return corev1.NodeStatus{
		DeclaredFeatures: DeclaredFeatures(),
		RuntimeHandlers:  h.RuntimeHandlers,
		Capacity:         capacity,
		Allocatable:      capacity.DeepCopy(),
		Phase:            corev1.NodeRunning,
		Conditions:       conds,
		Addresses:        addrs,
		DaemonEndpoints: corev1.NodeDaemonEndpoints{
			KubeletEndpoint: corev1.DaemonEndpoint{Port: h.KubeletPort},
		},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               h.MachineID,
			SystemUUID:              h.SystemUUID,
			BootID:                  h.BootID,
			KernelVersion:           h.KernelVersion,
			OSImage:                 h.OSImage,
			ContainerRuntimeVersion: runtimeVersion,
			KubeletVersion:          h.AgentVersion,
			OperatingSystem:         runtime.GOOS,
			Architecture:            runtime.GOARCH,
		},
	}
}

// DeclaredFeatures is the Node's status.declaredFeatures: of the
// features a v1.37 kubelet declares with its default feature gates, the
// ones syncpod implements, sorted. The control plane admits pods and
// requests that need a declared feature to the node: restart rules that
// restart every container. Left out: ExtendWebSocketsToKubelet (the
// read API does not translate the v5 WebSocket protocol to the runtime's
// streams itself, as the kubelet does), and
// InPlacePodVerticalScalingInitContainers and
// InPlacePodLevelResourcesVerticalScaling (R-25 resizes the running
// containers and sidecars, not init containers' or pod-level resources),
// so the API server keeps translating or refusing those for this node.
func DeclaredFeatures() []string {
	return []string{"RestartAllContainersOnContainerExits"}
}
