package validation

// Bounds on sizes. Names follow Kubernetes (pod 253, namespace, container
// and label names 63); argv and environment follow the Linux kernel
// (MAX_ARG_STRLEN per string, ARG_MAX in total), since a container whose
// command line is larger can never be started; annotations follow the API
// server (256 KiB in total). Every other string and list has a bound well
// above any real use, so that no request can make a service store, log or
// start an unbounded amount of anything.
const (
	// MaxContainers bounds init and regular containers of one pod together.
	MaxContainers = 64
	// MaxEnv bounds the env entries of a container.
	MaxEnv = 1024
	// MaxEnvNameLen bounds an env name.
	MaxEnvNameLen = 256
	// MaxArgs bounds the entries of command, args and an exec probe's command.
	MaxArgs = 1024
	// MaxArgLen is the kernel's MAX_ARG_STRLEN: one argument or one
	// "NAME=value" environment string, with its terminating NUL.
	MaxArgLen = 128 << 10
	// MaxArgvBytes is the kernel's ARG_MAX (with the default 8 MiB stack):
	// command, args and environment strings of one container together,
	// each with its NUL.
	MaxArgvBytes = 2 << 20
	// MaxPorts bounds the ports of a container.
	MaxPorts = 64
	// MaxRestartRules bounds a container's restart_policy_rules.
	MaxRestartRules = 20
	// MaxExitCodes bounds the exit codes of one restart rule.
	MaxExitCodes = 255
	// MaxLabels bounds the labels of a pod.
	MaxLabels = 256
	// MaxAnnotationsBytes bounds keys and values of all annotations, as
	// the API server does.
	MaxAnnotationsBytes = 256 << 10
	// MaxImageLen bounds an image reference.
	MaxImageLen = 4096
	// MaxPathLen bounds a file path (PATH_MAX) or an HTTP path.
	MaxPathLen = 4096
	// MaxHeaders bounds an HTTP probe's headers.
	MaxHeaders = 64
	// MaxHeaderNameLen and MaxHeaderValueLen bound an HTTP probe header.
	MaxHeaderNameLen  = 256
	MaxHeaderValueLen = 8 << 10
	// MaxNameLen bounds a DNS-1123 subdomain: a pod name, a host.
	MaxNameLen = 253
	// MaxLabelLen bounds a DNS-1123 label: a namespace, a container name.
	MaxLabelLen = 63
	// MaxIDLen bounds a runtime id (sandbox or container; CRI ids are 64
	// hex digits) and a uid.
	MaxIDLen = 256
	// MaxIPLen bounds an IP address's text.
	MaxIPLen = 64
	// MaxQuantityLen bounds a resource quantity's text.
	MaxQuantityLen = 64
	// MaxSpecHashLen bounds a spec hash.
	MaxSpecHashLen = 128
	// MaxReasonLen bounds a reason (a CamelCase word in practice).
	MaxReasonLen = 1024
	// MaxMessageLen bounds a human-readable message from a runtime or a
	// planner (the kubelet's termination messages are at most 4 KiB).
	MaxMessageLen = 64 << 10
	// MaxObservedSandboxes and MaxObservedContainers bound an observed
	// pod: every instance the runtime still has, dead ones included.
	MaxObservedSandboxes  = 1024
	MaxObservedContainers = 8192
)
