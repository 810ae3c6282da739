package plan

import syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

// Hash tags of the container config's volume fields (volume mounts,
// env_from, env value sources). They are hashed only when set, so a
// container that uses none of them hashes as it did before these fields
// existed (no restart on upgrade).
const (
	tagVolumeMounts = 140
	tagEnvFrom      = 141
	tagEnvSources   = 142
	tagSubPathExprs = 143
)

// hashVolumeFields adds volume_mounts (name, mount_path, read_only,
// sub_path, propagation of each, then each sub_path_expr set), env_from
// (prefix and the referenced object of each) and the env entries'
// value_from (index, kind and selector fields) to h, each only when
// non-empty.
func hashVolumeFields(h *hasher, c *syncpodv1.Container) {
	if vm := c.GetVolumeMounts(); len(vm) > 0 {
		h.field(tagVolumeMounts)
		h.uvarint(uint64(len(vm)))
		for _, m := range vm {
			h.str(m.GetName())
			h.str(m.GetMountPath())
			h.bool(m.GetReadOnly())
			h.str(m.GetSubPath())
			h.int32(int32(m.GetMountPropagation()))
		}
		hashSubPathExprs(h, vm)
	}
	if ef := c.GetEnvFrom(); len(ef) > 0 {
		h.field(tagEnvFrom)
		h.uvarint(uint64(len(ef)))
		for _, e := range ef {
			h.str(e.GetPrefix())
			h.str(e.GetConfigMapRef().GetName())
			h.bool(e.GetConfigMapRef().GetOptional())
			h.str(e.GetSecretRef().GetName())
			h.bool(e.GetSecretRef().GetOptional())
		}
	}
	var n uint64
	for _, e := range c.GetEnv() {
		if e.GetValueFrom() != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	h.field(tagEnvSources)
	h.uvarint(n)
	for i, e := range c.GetEnv() {
		vf := e.GetValueFrom()
		if vf == nil {
			continue
		}
		h.uvarint(uint64(i))
		switch s := vf.GetSource().(type) {
		case *syncpodv1.EnvVarSource_FieldRef:
			h.byte(1)
			h.str(s.FieldRef.GetFieldPath())
		case *syncpodv1.EnvVarSource_ResourceFieldRef:
			h.byte(2)
			h.str(s.ResourceFieldRef.GetContainerName())
			h.str(s.ResourceFieldRef.GetResource())
			h.str(s.ResourceFieldRef.GetDivisor())
		case *syncpodv1.EnvVarSource_ConfigMapKeyRef:
			h.byte(3)
			h.str(s.ConfigMapKeyRef.GetName())
			h.str(s.ConfigMapKeyRef.GetKey())
			h.bool(s.ConfigMapKeyRef.GetOptional())
		case *syncpodv1.EnvVarSource_SecretKeyRef:
			h.byte(4)
			h.str(s.SecretKeyRef.GetName())
			h.str(s.SecretKeyRef.GetKey())
			h.bool(s.SecretKeyRef.GetOptional())
		case *syncpodv1.EnvVarSource_FileKeyRef:
			h.byte(5)
			h.str(s.FileKeyRef.GetVolumeName())
			h.str(s.FileKeyRef.GetPath())
			h.str(s.FileKeyRef.GetKey())
			h.bool(s.FileKeyRef.GetOptional())
		default:
			h.byte(0)
		}
	}
}

func (h *hasher) bool(b bool) {
	if b {
		h.byte(1)
	} else {
		h.byte(0)
	}
}

// hashSubPathExprs adds the volume mounts' sub_path_expr (index and
// expression of each that has one) to h, only when one has: a change of
// the expression recreates the container, as the kubelet's hash of the
// whole container does.
func hashSubPathExprs(h *hasher, vm []*syncpodv1.VolumeMount) {
	var n uint64
	for _, m := range vm {
		if m.GetSubPathExpr() != "" {
			n++
		}
	}
	if n == 0 {
		return
	}
	h.field(tagSubPathExprs)
	h.uvarint(n)
	for i, m := range vm {
		if m.GetSubPathExpr() != "" {
			h.uvarint(uint64(i))
			h.str(m.GetSubPathExpr())
		}
	}
}
