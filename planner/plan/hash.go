package plan

import (
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// specHashVersion starts every canonical encoding; bump it only together
// with a deliberate change of the encoding (which restarts every container).
const specHashVersion = "syncpod.spec-hash.v1"

// FNV-64a parameters.
const (
	fnvOffset64 uint64 = 14695981039346656037
	fnvPrime64  uint64 = 1099511628211
)

// Field tags of the canonical encoding: the proto field numbers of Container.
const (
	tagName       = 1
	tagImage      = 2
	tagCommand    = 3
	tagArgs       = 4
	tagWorkingDir = 5
	tagEnv        = 6
	tagPorts      = 10
	tagResources  = 11
)

// SpecHash returns the spec hash of a container: 16 lower-case hex digits of
// FNV-64a over a hand-written canonical encoding of every container field
// that reaches the CRI container config. The executor records it on the
// container it creates (ContainerStart.spec_hash → ObservedContainer.spec_hash)
// and Compute restarts a running container whose recorded hash differs
// (R-4.3.1, R-5.3 "definition changed").
//
// Hashed, in this order, each introduced by its proto field number:
// name, image, command, args, working_dir, env (name and value of each entry,
// in order), ports (name, container_port, host_port, protocol with
// unspecified = TCP, host_ip of each entry, in order), and, only when one of them is set (so the hash of
// every container without them is what it was before they existed), a
// byte of flags: stdin 1, stdin_once 2, tty 4. A string is its length (uvarint) then its bytes; a list
// is its length then its items; an integer is a uvarint of its 32-bit
// two's-complement value.
//
// Then, each only when set (so older hashes stay valid), the security
// context, termination message path and policy, stdin, stdin_once, tty and
// the security context's AppArmor profile and SELinux options
// (specHashExtras), and volume_mounts, env_from and the env entries'
// value_from (hash_volumes.go).
//
// Not hashed, because they never reach the CRI container config:
// image_pull_policy, restart_policy, restart_policy_rules, the liveness,
// readiness and startup probes and the lifecycle hooks. Changing them
// never restarts a container. Pod-level settings (the pod security
// context, host namespaces) are not container fields and are not hashed
// either: a change applies to containers started afterwards. Nor is the
// pod's Service environment, which the executor adds at container start:
// a Service created or changed later restarts nothing.
//
// The value is stable across processes, builds and versions (it does not use
// proto.Marshal or map iteration); a golden test pins known values. A nil
// container hashes as an empty one.
//
// Resources are not hashed: they resize in place, as the
// kubelet's HashContainer leaves them out. The older hash had them,
// after the ports, as the resources field tag then requests.cpu,
// requests.memory, limits.cpu and limits.memory as written. A container created
// before that recorded the hash with its resources; hashMatches also
// accepts that older hash computed with today's (allocated) resources,
// so such a container is not restarted, and one whose resources have
// changed since is restarted as it was then.
func SpecHash(c *syncpodv1.Container) string {
	b := specHash(c, false).hexBytes()
	return string(b[:])
}

// hashMatches reports whether the hash recorded on st is c's, or the
// hash with resources of a container created before resources resized
// in place, without allocating.
func hashMatches(c *syncpodv1.Container, st *syncpodv1.ObservedContainer) bool {
	b := specHash(c, false).hexBytes()
	if st.GetSpecHash() == string(b[:]) {
		return true
	}
	b = specHash(c, true).hexBytes()
	return st.GetSpecHash() == string(b[:])
}

func specHash(c *syncpodv1.Container, withResources bool) hasher {
	h := hasher(fnvOffset64)
	h.raw(specHashVersion)
	h.field(tagName)
	h.str(c.GetName())
	h.field(tagImage)
	h.str(c.GetImage())
	h.field(tagCommand)
	h.strs(c.GetCommand())
	h.field(tagArgs)
	h.strs(c.GetArgs())
	h.field(tagWorkingDir)
	h.str(c.GetWorkingDir())
	h.field(tagEnv)
	env := c.GetEnv()
	h.uvarint(uint64(len(env)))
	for _, e := range env {
		h.str(e.GetName())
		h.str(e.GetValue())
	}
	h.field(tagPorts)
	ports := c.GetPorts()
	h.uvarint(uint64(len(ports)))
	for _, p := range ports {
		h.str(p.GetName())
		h.int32(p.GetContainerPort())
		h.int32(p.GetHostPort())
		h.protocol(p.GetProtocol())
		h.str(p.GetHostIp())
	}
	if withResources {
		h.field(tagResources)
		r := c.GetResources()
		h.str(r.GetRequests().GetCpu())
		h.str(r.GetRequests().GetMemory())
		h.str(r.GetLimits().GetCpu())
		h.str(r.GetLimits().GetMemory())
	}
	specHashExtras(&h, c)
	hashVolumeFields(&h, c)
	return h
}

// Field tags of the fields added with the security context (proto field
// numbers of Container in the 100 range).
const (
	tagSecurityContext          = 100
	tagTerminationMessagePath   = 102
	tagTerminationMessagePolicy = 103
	tagStdin                    = 104
	tagStdinOnce                = 105
	tagTty                      = 106
	tagAppArmor                 = 110
	tagSELinux                  = 111
	tagStopSignal               = 112
)

// specHashExtras hashes the container fields added with the security
// context, each only when set, so a container that sets none keeps the
// hash it had before they existed: security_context (each optional field
// as presence then value; capabilities; seccomp type and localhost
// profile), termination_message_path and _policy, stdin, stdin_once, tty.
// lifecycle's hooks are not hashed: they are run by the executor, not put
// in the CRI config, so changing one restarts nothing (as with probes);
// its stop_signal is in the CRI config, and hashed when set.
func specHashExtras(h *hasher, c *syncpodv1.Container) {
	if sc := c.GetSecurityContext(); sc != nil {
		h.field(tagSecurityContext)
		optBool := func(v *bool) {
			switch {
			case v == nil:
				h.byte(0)
			case *v:
				h.byte(2)
			default:
				h.byte(1)
			}
		}
		h.optInt(sc.RunAsUser)
		h.optInt(sc.RunAsGroup)
		optBool(sc.RunAsNonRoot)
		optBool(sc.ReadOnlyRootFilesystem)
		optBool(sc.Privileged)
		optBool(sc.AllowPrivilegeEscalation)
		if caps := sc.GetCapabilities(); caps != nil {
			h.byte(1)
			h.strs(caps.GetAdd())
			h.strs(caps.GetDrop())
		} else {
			h.byte(0)
		}
		h.seccomp(sc.GetSeccompProfile())
	}
	if p := c.GetTerminationMessagePath(); p != "" {
		h.field(tagTerminationMessagePath)
		h.str(p)
	}
	if p := c.GetTerminationMessagePolicy(); p != syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_UNSPECIFIED {
		h.field(tagTerminationMessagePolicy)
		h.int32(int32(p))
	}
	if c.GetStdin() {
		h.field(tagStdin)
	}
	if c.GetStdinOnce() {
		h.field(tagStdinOnce)
	}
	if c.GetTty() {
		h.field(tagTty)
	}
	hashAppArmor(h, tagAppArmor, c.GetSecurityContext().GetAppArmorProfile())
	hashSELinux(h, tagSELinux, c.GetSecurityContext().GetSeLinuxOptions())
	if sig := c.GetLifecycle().GetStopSignal(); sig != "" {
		h.field(tagStopSignal)
		h.str(sig)
	}
}

// hashAppArmor hashes a set AppArmor profile (type, localhost profile)
// under tag; nothing when unset.
func hashAppArmor(h *hasher, tag byte, ap *syncpodv1.AppArmorProfile) {
	if ap == nil {
		return
	}
	h.field(tag)
	h.int32(int32(ap.GetType()))
	h.str(ap.GetLocalhostProfile())
}

// hashSELinux hashes set SELinux options (user, role, type, level) under
// tag; nothing when unset.
func hashSELinux(h *hasher, tag byte, o *syncpodv1.SELinuxOptions) {
	if o == nil {
		return
	}
	h.field(tag)
	h.str(o.GetUser())
	h.str(o.GetRole())
	h.str(o.GetType())
	h.str(o.GetLevel())
}

// hasher is an allocation-free FNV-64a state.
type hasher uint64

func (h *hasher) byte(b byte) {
	*h = hasher((uint64(*h) ^ uint64(b)) * fnvPrime64)
}

func (h *hasher) raw(s string) {
	for i := 0; i < len(s); i++ {
		h.byte(s[i])
	}
}

func (h *hasher) field(tag byte) { h.byte(tag) }

func (h *hasher) uvarint(v uint64) {
	for v >= 0x80 {
		h.byte(byte(v) | 0x80)
		v >>= 7
	}
	h.byte(byte(v))
}

func (h *hasher) int32(v int32) { h.uvarint(uint64(uint32(v))) }

func (h *hasher) str(s string) {
	h.uvarint(uint64(len(s)))
	h.raw(s)
}

func (h *hasher) strs(ss []string) {
	h.uvarint(uint64(len(ss)))
	for _, s := range ss {
		h.str(s)
	}
}

// optInt hashes an optional integer: presence, then the value.
func (h *hasher) optInt(v *int64) {
	if v == nil {
		h.byte(0)
		return
	}
	h.byte(1)
	h.uvarint(uint64(*v))
}

// seccomp hashes an optional seccomp profile: presence, then type and
// localhost profile.
func (h *hasher) seccomp(sp *syncpodv1.SeccompProfile) {
	if sp == nil {
		h.byte(0)
		return
	}
	h.byte(1)
	h.int32(int32(sp.GetType()))
	h.str(sp.GetLocalhostProfile())
}

// protocol hashes a port protocol, unspecified being TCP.
func (h *hasher) protocol(p syncpodv1.Protocol) {
	if p == syncpodv1.Protocol_PROTOCOL_UNSPECIFIED {
		p = syncpodv1.Protocol_PROTOCOL_TCP
	}
	h.int32(int32(p))
}

func (h hasher) hexBytes() [16]byte {
	const digits = "0123456789abcdef"
	var b [16]byte
	v := uint64(h)
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return b
}
