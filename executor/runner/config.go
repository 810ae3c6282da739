package runner

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/proto/linuxres"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// maxFileName is the longest file name (one path element) Linux file
// systems take (NAME_MAX).
const maxFileName = 255

// PodLogDir is the pod's log directory under root:
// <root>/<namespace>_<name>_<uid>, as the kubelet lays it out. A pod name
// may be 253 characters long, which with the namespace and the uid is over
// what one file name can be: the name part is then cut so that the
// directory can be made (the uid keeps it unique), where the kubelet's
// sandbox creation would fail.
func PodLogDir(root string, pod *syncpodv1.Pod) string {
	ns, name, uid := namespace(pod), pod.GetName(), pod.GetUid()
	if over := len(ns) + len(name) + len(uid) + 2 - maxFileName; over > 0 && over < len(name) {
		name = name[:len(name)-over]
	}
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", ns, name, uid))
}

// hostnameMax is the longest hostname the kernel takes (HOST_NAME_MAX 64
// with its NUL).
const hostnameMax = 63

// PodHostname is the hostname of a pod that is not on the host network, as
// the kubelet derives it (GeneratePodHostNameAndDomain): spec.hostname,
// else the pod name; over 63 characters it is cut to 63 and trailing '-'
// and '.' are trimmed.
func PodHostname(pod *syncpodv1.Pod) string {
	h := pod.GetSpec().GetHostname()
	if h == "" {
		h = pod.GetName()
	}
	if len(h) <= hostnameMax {
		return h
	}
	if cut := strings.TrimRight(h[:hostnameMax], "-."); cut != "" {
		return cut
	}
	return h[:hostnameMax]
}

// ContainerLogPath is a container's log path relative to the pod log
// directory: <name>/<restart count>.log.
func ContainerLogPath(name string, restartCount int32) string {
	return filepath.Join(name, strconv.Itoa(int(restartCount))+".log")
}

func podLabels(pod *syncpodv1.Pod) map[string]string {
	return map[string]string{
		crilabels.Managed:      crilabels.ManagedValue,
		crilabels.PodUID:       pod.GetUid(),
		crilabels.PodName:      pod.GetName(),
		crilabels.PodNamespace: namespace(pod),
	}
}

// SandboxConfig builds the CRI sandbox config of pod with attempt: user
// labels and annotations, syncpod's labels on top, log directory under
// logRoot, the pod's namespaces and security settings as the kubelet fills
// them (sandboxLinux) and its host port mappings. The DNS configuration,
// which depends on the node, is added by the runner (DNSConfig).
func SandboxConfig(pod *syncpodv1.Pod, attempt uint32, logRoot string) *runtimeapi.PodSandboxConfig {
	labels := maps.Clone(pod.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, podLabels(pod))
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.GetName(), Namespace: namespace(pod), Uid: pod.GetUid(), Attempt: attempt,
		},
		LogDirectory: PodLogDir(logRoot, pod),
		Labels:       labels,
		Annotations:  maps.Clone(pod.GetAnnotations()),
		Linux:        sandboxLinux(pod),
	}
	if !pod.GetSpec().GetHostNetwork() {
		cfg.Hostname = PodHostname(pod)
	}
	all := append(append([]*syncpodv1.Container(nil), pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...)
	for _, c := range all {
		for _, port := range c.GetPorts() {
			if port.GetHostPort() == 0 {
				continue
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol:      protocol(port.GetProtocol()),
				ContainerPort: port.GetContainerPort(),
				HostPort:      port.GetHostPort(),
				HostIp:        port.GetHostIp(),
			})
		}
	}
	return cfg
}

func protocol(p syncpodv1.Protocol) runtimeapi.Protocol {
	switch p {
	case syncpodv1.Protocol_PROTOCOL_UDP:
		return runtimeapi.Protocol_UDP
	case syncpodv1.Protocol_PROTOCOL_SCTP:
		return runtimeapi.Protocol_SCTP
	default:
		return runtimeapi.Protocol_TCP
	}
}

// ContainerType is the crilabels container type of c.
func ContainerType(c *syncpodv1.Container, init bool) string {
	switch {
	case init && isSidecar(c):
		return crilabels.ContainerTypeSidecar
	case init:
		return crilabels.ContainerTypeInit
	default:
		return crilabels.ContainerTypeRegular
	}
}

// ContainerOptions are the node- and image-dependent inputs of a
// container config.
type ContainerOptions struct {
	// Image is the user the image runs as (from CRI ImageStatus).
	Image ImageUser
	// Security holds the node's seccomp settings.
	Security SecurityOptions
	// MemoryCapacity is the node's memory in bytes (Burstable OOM score).
	MemoryCapacity int64
	// Mounts are the container's mounts, the kubelet's defaults included.
	Mounts []*runtimeapi.Mount
}

// ContainerConfig builds the CRI config of container c of pod: metadata
// attempt = restart count, labels (syncpod's, container name, type, spec
// hash) and annotations (restart count, grace period, termination message
// path and policy) the PLEG reads back, and, as the kubelet fills them,
// the security context (containerSecurity), the OOM score adjustment of
// the pod's QoS class, stdin/tty and the mounts of opts.
func ContainerConfig(pod *syncpodv1.Pod, c *syncpodv1.Container, init bool, specHash string, restartCount int32, opts ContainerOptions) (*runtimeapi.ContainerConfig, error) {
	res, err := Resources(boundedByPod(pod, c))
	if err != nil {
		return nil, err
	}
	labels := podLabels(pod)
	labels[crilabels.ContainerName] = c.GetName()
	labels[crilabels.ContainerType] = ContainerType(c, init)
	labels[crilabels.SpecHash] = specHash
	cfg := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: c.GetName(), Attempt: uint32(restartCount)},
		Image:      &runtimeapi.ImageSpec{Image: c.GetImage()},
		Command:    c.GetCommand(),
		Args:       c.GetArgs(),
		WorkingDir: c.GetWorkingDir(),
		Stdin:      c.GetStdin(),
		StdinOnce:  c.GetStdinOnce(),
		Tty:        c.GetTty(),
		Labels:     labels,
		Annotations: map[string]string{
			crilabels.RestartCount:           strconv.Itoa(int(restartCount)),
			crilabels.TerminationGracePeriod: strconv.FormatInt(GracePeriod(&syncpodv1.Pod{Spec: pod.GetSpec()}, nil, 0), 10),
		},
		LogPath: ContainerLogPath(c.GetName(), restartCount),
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       res,
			SecurityContext: containerSecurity(pod, c, opts.Image, opts.Security),
		},
		Mounts: opts.Mounts,
	}
	res.OomScoreAdj = OOMScoreAdj(pod, c, init, opts.MemoryCapacity)
	cfg.Annotations[crilabels.TerminationMessagePath] = TerminationMessagePath(c)
	cfg.Annotations[crilabels.MemoryRequest] = strconv.FormatInt(linuxres.MemoryRequestBytes(c.GetResources()), 10)
	cfg.Annotations[crilabels.TerminationMessagePolicy] = terminationMessagePolicy(c)
	if h := c.GetLifecycle().GetPreStop(); h != nil {
		b, err := protojson.Marshal(h)
		if err != nil {
			return nil, fmt.Errorf("lifecycle.preStop: %w", err)
		}
		cfg.Annotations[crilabels.PreStopHandler] = string(b)
	}
	for _, e := range c.GetEnv() {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: e.GetName(), Value: []byte(e.GetValue())})
	}
	cfg.StopSignal = StopSignal(c.GetLifecycle().GetStopSignal())
	return cfg, nil
}

// signalEnumName turns a Kubernetes signal name into its CRI enum name's
// tail: "SIGRTMIN+3" is SIGNAL_SIGRTMINPLUS3, "SIGRTMAX-1" SIGNAL_SIGRTMAXMINUS1.
var signalEnumName = strings.NewReplacer("+", "PLUS", "-", "MINUS")

// StopSignal is the CRI stop signal of a container's lifecycle.stopSignal
// (Kubernetes' name, e.g. "SIGUSR1"), as the kubelet puts it in the
// container config: RUNTIME_DEFAULT, the runtime's or image's
// own, when none is set (or the name is not one validation lets through).
func StopSignal(name string) runtimeapi.Signal {
	if name == "" {
		return runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT
	}
	return runtimeapi.Signal(runtimeapi.Signal_value["SIGNAL_"+signalEnumName.Replace(name)])
}

// Resources converts Kubernetes quantities to Linux resources as the
// kubelet does (proto/linuxres): CPU shares from the request (the limit
// when no request), CFS quota from the CPU limit, memory limit in bytes.
func Resources(r *syncpodv1.ResourceRequirements) (*runtimeapi.LinuxContainerResources, error) {
	v, err := linuxres.Of(r)
	if err != nil {
		return nil, err
	}
	return LinuxResources(v), nil
}

// LinuxResources is v as the CRI's Linux resources.
func LinuxResources(v linuxres.Values) *runtimeapi.LinuxContainerResources {
	return &runtimeapi.LinuxContainerResources{CpuShares: v.CPUShares, CpuQuota: v.CPUQuota,
		CpuPeriod: v.CPUPeriod, MemoryLimitInBytes: v.MemoryLimitBytes}
}

// Termination message policies as the kubelet writes them in the
// container's annotation.
const (
	TerminationMessagePolicyFile                  = "File"
	TerminationMessagePolicyFallbackToLogsOnError = "FallbackToLogsOnError"
)

func terminationMessagePolicy(c *syncpodv1.Container) string {
	if c.GetTerminationMessagePolicy() == syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_FALLBACK_TO_LOGS_ON_ERROR {
		return TerminationMessagePolicyFallbackToLogsOnError
	}
	return TerminationMessagePolicyFile
}
