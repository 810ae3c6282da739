package kubeconv

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The inverse of the manifest's volumes.go: spec.volumes,
// containers[].volumeMounts, envFrom and env[].valueFrom.

func volumesToAPI(vols []*syncpodv1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vols {
		kv := corev1.Volume{Name: v.GetName()}
		src := &kv.VolumeSource
		switch {
		case v.GetEmptyDir() != nil:
			e := v.GetEmptyDir()
			src.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: storageMedia[e.GetMedium()], SizeLimit: quantityToAPI(e.GetSizeLimit())}
		case v.GetHostPath() != nil:
			h := v.GetHostPath()
			src.HostPath = &corev1.HostPathVolumeSource{Path: h.GetPath()}
			if t, ok := hostPathTypes[h.GetType()]; ok {
				src.HostPath.Type = &t
			}
		case v.GetImage() != nil:
			src.Image = &corev1.ImageVolumeSource{Reference: v.GetImage().GetReference(), PullPolicy: PullPolicyToAPI(v.GetImage().GetPullPolicy())}
		case v.GetConfigMap() != nil:
			c := v.GetConfigMap()
			src.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: c.GetName()},
				Items: keyToPathsToAPI(c.GetItems()), DefaultMode: c.DefaultMode, Optional: optionalToAPI(c.GetOptional())}
		case v.GetSecret() != nil:
			s := v.GetSecret()
			src.Secret = &corev1.SecretVolumeSource{SecretName: s.GetSecretName(),
				Items: keyToPathsToAPI(s.GetItems()), DefaultMode: s.DefaultMode, Optional: optionalToAPI(s.GetOptional())}
		case v.GetDownwardApi() != nil:
			d := v.GetDownwardApi()
			src.DownwardAPI = &corev1.DownwardAPIVolumeSource{Items: downwardItemsToAPI(d.GetItems()), DefaultMode: d.DefaultMode}
		case v.GetProjected() != nil:
			src.Projected = projectedToAPI(v.GetProjected())
		}
		out = append(out, kv)
	}
	return out
}

func projectedToAPI(p *syncpodv1.ProjectedVolumeSource) *corev1.ProjectedVolumeSource {
	out := &corev1.ProjectedVolumeSource{DefaultMode: p.DefaultMode}
	for _, s := range p.GetSources() {
		var kp corev1.VolumeProjection
		switch {
		case s.GetConfigMap() != nil:
			c := s.GetConfigMap()
			kp.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: c.GetName()},
				Items: keyToPathsToAPI(c.GetItems()), Optional: optionalToAPI(c.GetOptional())}
		case s.GetSecret() != nil:
			c := s.GetSecret()
			kp.Secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: c.GetName()},
				Items: keyToPathsToAPI(c.GetItems()), Optional: optionalToAPI(c.GetOptional())}
		case s.GetDownwardApi() != nil:
			kp.DownwardAPI = &corev1.DownwardAPIProjection{Items: downwardItemsToAPI(s.GetDownwardApi().GetItems())}
		case s.GetServiceAccountToken() != nil:
			t := s.GetServiceAccountToken()
			kp.ServiceAccountToken = &corev1.ServiceAccountTokenProjection{Audience: t.GetAudience(), Path: t.GetPath()}
			if e := t.GetExpirationSeconds(); e != 0 {
				kp.ServiceAccountToken.ExpirationSeconds = &e
			}
		}
		out.Sources = append(out.Sources, kp)
	}
	return out
}

var storageMedia = map[syncpodv1.StorageMedium]corev1.StorageMedium{
	syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY: corev1.StorageMediumMemory,
}

// hostPathTypes spell the hostPath checks; unset is no type at all.
var hostPathTypes = map[syncpodv1.HostPathType]corev1.HostPathType{
	syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY_OR_CREATE: corev1.HostPathDirectoryOrCreate,
	syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY:           corev1.HostPathDirectory,
	syncpodv1.HostPathType_HOST_PATH_TYPE_FILE_OR_CREATE:      corev1.HostPathFileOrCreate,
	syncpodv1.HostPathType_HOST_PATH_TYPE_FILE:                corev1.HostPathFile,
	syncpodv1.HostPathType_HOST_PATH_TYPE_SOCKET:              corev1.HostPathSocket,
	syncpodv1.HostPathType_HOST_PATH_TYPE_CHAR_DEVICE:         corev1.HostPathCharDev,
	syncpodv1.HostPathType_HOST_PATH_TYPE_BLOCK_DEVICE:        corev1.HostPathBlockDev,
}

// quantityToAPI is q parsed; nil when empty (or not a quantity, which
// the manifest conversion never stores).
func quantityToAPI(q string) *resource.Quantity {
	if q == "" {
		return nil
	}
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return nil
	}
	return &v
}

// optionalToAPI is an optional flag as a manifest writes it: set only
// when true.
func optionalToAPI(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

func keyToPathsToAPI(items []*syncpodv1.KeyToPath) []corev1.KeyToPath {
	var out []corev1.KeyToPath
	for _, it := range items {
		out = append(out, corev1.KeyToPath{Key: it.GetKey(), Path: it.GetPath(), Mode: it.Mode})
	}
	return out
}

func downwardItemsToAPI(items []*syncpodv1.DownwardAPIVolumeFile) []corev1.DownwardAPIVolumeFile {
	var out []corev1.DownwardAPIVolumeFile
	for _, it := range items {
		f := corev1.DownwardAPIVolumeFile{Path: it.GetPath(), Mode: it.Mode, ResourceFieldRef: resourceFieldRefToAPI(it.GetResourceFieldRef())}
		if r := it.GetFieldRef(); r != nil {
			f.FieldRef = &corev1.ObjectFieldSelector{FieldPath: r.GetFieldPath()}
		}
		out = append(out, f)
	}
	return out
}

func resourceFieldRefToAPI(r *syncpodv1.ResourceFieldSelector) *corev1.ResourceFieldSelector {
	if r == nil {
		return nil
	}
	out := &corev1.ResourceFieldSelector{ContainerName: r.GetContainerName(), Resource: r.GetResource()}
	if d := quantityToAPI(r.GetDivisor()); d != nil {
		out.Divisor = *d
	}
	return out
}

var mountPropagations = map[syncpodv1.MountPropagation]corev1.MountPropagationMode{
	syncpodv1.MountPropagation_MOUNT_PROPAGATION_NONE:              corev1.MountPropagationNone,
	syncpodv1.MountPropagation_MOUNT_PROPAGATION_HOST_TO_CONTAINER: corev1.MountPropagationHostToContainer,
	syncpodv1.MountPropagation_MOUNT_PROPAGATION_BIDIRECTIONAL:     corev1.MountPropagationBidirectional,
}

func volumeMountsToAPI(mounts []*syncpodv1.VolumeMount) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, m := range mounts {
		km := corev1.VolumeMount{Name: m.GetName(), MountPath: m.GetMountPath(), ReadOnly: m.GetReadOnly(),
			SubPath: m.GetSubPath(), SubPathExpr: m.GetSubPathExpr()}
		if p, ok := mountPropagations[m.GetMountPropagation()]; ok {
			km.MountPropagation = &p
		}
		out = append(out, km)
	}
	return out
}

func envToAPI(env []*syncpodv1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		out = append(out, corev1.EnvVar{Name: e.GetName(), Value: e.GetValue(), ValueFrom: envValueFromToAPI(e.GetValueFrom())})
	}
	return out
}

func envValueFromToAPI(vf *syncpodv1.EnvVarSource) *corev1.EnvVarSource {
	if vf == nil {
		return nil
	}
	out := &corev1.EnvVarSource{}
	switch {
	case vf.GetFieldRef() != nil:
		out.FieldRef = &corev1.ObjectFieldSelector{FieldPath: vf.GetFieldRef().GetFieldPath()}
	case vf.GetResourceFieldRef() != nil:
		out.ResourceFieldRef = resourceFieldRefToAPI(vf.GetResourceFieldRef())
	case vf.GetConfigMapKeyRef() != nil:
		r := vf.GetConfigMapKeyRef()
		out.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.GetName()},
			Key: r.GetKey(), Optional: optionalToAPI(r.GetOptional())}
	case vf.GetSecretKeyRef() != nil:
		r := vf.GetSecretKeyRef()
		out.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.GetName()},
			Key: r.GetKey(), Optional: optionalToAPI(r.GetOptional())}
	case vf.GetFileKeyRef() != nil:
		r := vf.GetFileKeyRef()
		out.FileKeyRef = &corev1.FileKeySelector{VolumeName: r.GetVolumeName(), Path: r.GetPath(), Key: r.GetKey(),
			Optional: optionalToAPI(r.GetOptional())}
	}
	return out
}

func envFromToAPI(list []*syncpodv1.EnvFromSource) []corev1.EnvFromSource {
	var out []corev1.EnvFromSource
	for _, e := range list {
		ke := corev1.EnvFromSource{Prefix: e.GetPrefix()}
		if r := e.GetConfigMapRef(); r != nil {
			ke.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.GetName()},
				Optional: optionalToAPI(r.GetOptional())}
		}
		if r := e.GetSecretRef(); r != nil {
			ke.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.GetName()},
				Optional: optionalToAPI(r.GetOptional())}
		}
		out = append(out, ke)
	}
	return out
}
