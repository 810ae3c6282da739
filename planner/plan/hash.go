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
// unspecified = TCP, host_ip of each entry, in order), resources (requests.cpu,
// requests.memory, limits.cpu, limits.memory, as written: "1" and "1000m"
// hash differently). A string is its length (uvarint) then its bytes; a list
// is its length then its items; an integer is a uvarint of its 32-bit
// two's-complement value.
//
// Then, only when set (hash_volumes.go): volume_mounts, env_from and the
// env entries' value_from.
//
// Not hashed, because they never reach the CRI container config:
// image_pull_policy, restart_policy, restart_policy_rules and the liveness,
// readiness and startup probes. Changing them never restarts a container.
//
// The value is stable across processes, builds and versions (it does not use
// proto.Marshal or map iteration); a golden test pins known values. A nil
// container hashes as an empty one.
func SpecHash(c *syncpodv1.Container) string {
	b := specHash(c).hexBytes()
	return string(b[:])
}

// hashMatches reports whether the hash recorded on st is c's, without
// allocating.
func hashMatches(c *syncpodv1.Container, st *syncpodv1.ObservedContainer) bool {
	b := specHash(c).hexBytes()
	return st.GetSpecHash() == string(b[:])
}

func specHash(c *syncpodv1.Container) hasher {
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
		proto := p.GetProtocol()
		if proto == syncpodv1.Protocol_PROTOCOL_UNSPECIFIED {
			proto = syncpodv1.Protocol_PROTOCOL_TCP
		}
		h.int32(int32(proto))
		h.str(p.GetHostIp())
	}
	h.field(tagResources)
	r := c.GetResources()
	h.str(r.GetRequests().GetCpu())
	h.str(r.GetRequests().GetMemory())
	h.str(r.GetLimits().GetCpu())
	h.str(r.GetLimits().GetMemory())
	hashVolumeFields(&h, c)
	return h
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
