package crilabels

const (
	// Managed marks a sandbox or container as created by syncpod; the PLEG
	// and housekeeping only look at objects with Managed=ManagedValue.
	Managed = "io.syncpod.managed"
	// ManagedValue is the value of Managed.
	ManagedValue = "true"
	// PodUID is the pod's uid (sandbox and container label).
	PodUID = "io.kubernetes.pod.uid"
	// PodName is the pod's name (sandbox and container label).
	PodName = "io.kubernetes.pod.name"
	// PodNamespace is the pod's namespace (sandbox and container label).
	PodNamespace = "io.kubernetes.pod.namespace"
	// ContainerName is the container's name in the pod spec (container
	// label).
	ContainerName = "io.kubernetes.container.name"
	// ContainerType is ContainerTypeInit, ContainerTypeSidecar,
	// ContainerTypeRegular or ContainerTypeEphemeral (container label).
	ContainerType = "io.syncpod.container.type"
	// SpecHash is the container's spec hash at creation (container label).
	SpecHash = "io.syncpod.container.spec-hash"
	// SandboxConfigHash is the hash of the pod-level settings the sandbox
	// was created with (PodActions.sandbox_config_hash; sandbox label).
	SandboxConfigHash = "io.syncpod.sandbox.config-hash"
	// RestartCount is the container's restart count, decimal (container
	// annotation).
	RestartCount = "io.kubernetes.container.restartCount"
	// TerminationGracePeriod is the pod's termination grace period in
	// seconds, decimal, so a kill can honour it without the pod object
	// (rule; container annotation).
	TerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	// PreStopHandler is the container's preStop hook, the protojson of a
	// syncpod.v1.LifecycleHandler, so a container stopped without its spec
	// (removed from the pod, or an orphan) still gets its hook (rule;
	// container annotation, the kubelet's key).
	PreStopHandler = "io.kubernetes.container.preStopHandler"
	// TerminationMessagePath is the path in the container its termination
	// message is read from (container annotation, as the kubelet's).
	TerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	// TerminationMessagePolicy is "File" or "FallbackToLogsOnError"
	// (container annotation, as the kubelet's).
	TerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	// MemoryRequest is the container's memory request in bytes at
	// creation, decimal, "0" when it has none (container annotation): a
	// request sets nothing in the runtime, so a resize of it is seen here
	// (rule ).
	MemoryRequest = "io.syncpod.container.memory-request"
)

// Container type values of the ContainerType label.
const (
	ContainerTypeInit    = "init"
	ContainerTypeSidecar = "sidecar"
	ContainerTypeRegular = "container"
	// ContainerTypeEphemeral marks an ephemeral container.
	ContainerTypeEphemeral = "ephemeral"
)

// ManagedSelector is the label selector for ListPodSandbox and
// ListContainers filters that selects syncpod's objects only.
func ManagedSelector() map[string]string {
	return map[string]string{Managed: ManagedValue}
}
