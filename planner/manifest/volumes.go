package manifest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The schema and conversion of spec.volumes, containers[].volumeMounts,
// envFrom and env[].valueFrom.

func keyToPathSchema() *schema {
	return listOf(obj(map[string]*schema{"key": leaf(), "path": leaf(), "mode": leaf()}))
}

func fieldRefSchema() *schema {
	return obj(map[string]*schema{"apiVersion": leaf(), "fieldPath": leaf()})
}

func resourceFieldRefSchema() *schema {
	return obj(map[string]*schema{"containerName": leaf(), "resource": leaf(), "divisor": leaf()})
}

func downwardItemsSchema() *schema {
	return listOf(obj(map[string]*schema{
		"path": leaf(), "fieldRef": fieldRefSchema(), "resourceFieldRef": resourceFieldRefSchema(), "mode": leaf(),
	}))
}

// volumeSchema is one entry of spec.volumes: the sources syncpod runs.
func volumeSchema() *schema {
	return obj(map[string]*schema{
		"name":        leaf(),
		"emptyDir":    obj(map[string]*schema{"medium": leaf(), "sizeLimit": leaf()}),
		"hostPath":    obj(map[string]*schema{"path": leaf(), "type": leaf()}),
		"image":       obj(map[string]*schema{"reference": leaf(), "pullPolicy": leaf()}),
		"configMap":   obj(map[string]*schema{"name": leaf(), "items": keyToPathSchema(), "defaultMode": leaf(), "optional": leaf()}),
		"secret":      obj(map[string]*schema{"secretName": leaf(), "items": keyToPathSchema(), "defaultMode": leaf(), "optional": leaf()}),
		"downwardAPI": obj(map[string]*schema{"items": downwardItemsSchema(), "defaultMode": leaf()}),
		"projected": obj(map[string]*schema{
			"defaultMode": leaf(),
			"sources": listOf(obj(map[string]*schema{
				"configMap":   obj(map[string]*schema{"name": leaf(), "items": keyToPathSchema(), "optional": leaf()}),
				"secret":      obj(map[string]*schema{"name": leaf(), "items": keyToPathSchema(), "optional": leaf()}),
				"downwardAPI": obj(map[string]*schema{"items": downwardItemsSchema()}),
				// Converted for pods from the API server only.
				"serviceAccountToken": obj(map[string]*schema{"audience": leaf(), "expirationSeconds": leaf(), "path": leaf()}),
			})),
		}),
	})
}

func volumeMountSchema() *schema {
	return listOf(obj(map[string]*schema{
		"name": leaf(), "mountPath": leaf(), "readOnly": leaf(), "subPath": leaf(), "subPathExpr": leaf(), "mountPropagation": leaf(),
	}))
}

func envFromSchema() *schema {
	ref := obj(map[string]*schema{"name": leaf(), "optional": leaf()})
	return listOf(obj(map[string]*schema{"prefix": leaf(), "configMapRef": ref, "secretRef": ref}))
}

func envSchema() *schema {
	keyRef := obj(map[string]*schema{"name": leaf(), "key": leaf(), "optional": leaf()})
	return listOf(obj(map[string]*schema{
		"name": leaf(), "value": leaf(),
		"valueFrom": obj(map[string]*schema{
			"fieldRef": fieldRefSchema(), "resourceFieldRef": resourceFieldRefSchema(),
			"configMapKeyRef": keyRef, "secretKeyRef": keyRef,
			"fileKeyRef": obj(map[string]*schema{"volumeName": leaf(), "path": leaf(), "key": leaf(), "optional": leaf()}),
		}),
	}))
}

func optionalBool(b *bool) bool { return b != nil && *b }

func keyToPaths(items []corev1.KeyToPath) []*syncpodv1.KeyToPath {
	var out []*syncpodv1.KeyToPath
	for _, it := range items {
		out = append(out, &syncpodv1.KeyToPath{Key: it.Key, Path: it.Path, Mode: it.Mode})
	}
	return out
}

func (c *converter) resourceFieldRef(r *corev1.ResourceFieldSelector) *syncpodv1.ResourceFieldSelector {
	out := &syncpodv1.ResourceFieldSelector{ContainerName: r.ContainerName, Resource: r.Resource}
	if !r.Divisor.IsZero() {
		out.Divisor = r.Divisor.String()
	}
	return out
}

func (c *converter) downwardItems(path string, items []corev1.DownwardAPIVolumeFile) []*syncpodv1.DownwardAPIVolumeFile {
	var out []*syncpodv1.DownwardAPIVolumeFile
	for i, it := range items {
		f := &syncpodv1.DownwardAPIVolumeFile{Path: it.Path, Mode: it.Mode}
		if it.FieldRef != nil {
			c.apiVersion(fmt.Sprintf("%s[%d].fieldRef.apiVersion", path, i), it.FieldRef.APIVersion)
			f.FieldRef = &syncpodv1.ObjectFieldSelector{FieldPath: it.FieldRef.FieldPath}
		}
		if it.ResourceFieldRef != nil {
			f.ResourceFieldRef = c.resourceFieldRef(it.ResourceFieldRef)
		}
		out = append(out, f)
	}
	return out
}

func (c *converter) apiVersion(path, v string) {
	if v != "" && v != "v1" {
		c.errorf(path, "must be \"v1\", got %q", v)
	}
}

func (c *converter) volumes(vols []corev1.Volume) []*syncpodv1.Volume {
	var out []*syncpodv1.Volume
	for i, v := range vols {
		path := fmt.Sprintf("spec.volumes[%d]", i)
		sv := &syncpodv1.Volume{Name: v.Name}
		src := v.VolumeSource
		switch {
		case src.HostPath != nil:
			hp := &syncpodv1.HostPathVolumeSource{Path: src.HostPath.Path}
			if src.HostPath.Type != nil {
				t, ok := map[corev1.HostPathType]syncpodv1.HostPathType{
					corev1.HostPathUnset:             syncpodv1.HostPathType_HOST_PATH_TYPE_UNSPECIFIED,
					corev1.HostPathDirectoryOrCreate: syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY_OR_CREATE,
					corev1.HostPathDirectory:         syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY,
					corev1.HostPathFileOrCreate:      syncpodv1.HostPathType_HOST_PATH_TYPE_FILE_OR_CREATE,
					corev1.HostPathFile:              syncpodv1.HostPathType_HOST_PATH_TYPE_FILE,
					corev1.HostPathSocket:            syncpodv1.HostPathType_HOST_PATH_TYPE_SOCKET,
					corev1.HostPathCharDev:           syncpodv1.HostPathType_HOST_PATH_TYPE_CHAR_DEVICE,
					corev1.HostPathBlockDev:          syncpodv1.HostPathType_HOST_PATH_TYPE_BLOCK_DEVICE,
				}[*src.HostPath.Type]
				if !ok {
					c.errorf(path+".hostPath.type", "must be \"\", DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice or BlockDevice, got %q", *src.HostPath.Type)
				}
				hp.Type = t
			}
			sv.Source = &syncpodv1.Volume_HostPath{HostPath: hp}
		case src.Image != nil:
			sv.Source = &syncpodv1.Volume_Image{Image: &syncpodv1.ImageVolumeSource{
				Reference: src.Image.Reference, PullPolicy: c.pullPolicy(path+".image.pullPolicy", src.Image.PullPolicy)}}
		case src.ConfigMap != nil:
			sv.Source = &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{
				Name: src.ConfigMap.Name, Items: keyToPaths(src.ConfigMap.Items),
				DefaultMode: src.ConfigMap.DefaultMode, Optional: optionalBool(src.ConfigMap.Optional)}}
		case src.Secret != nil:
			sv.Source = &syncpodv1.Volume_Secret{Secret: &syncpodv1.SecretVolumeSource{
				SecretName: src.Secret.SecretName, Items: keyToPaths(src.Secret.Items),
				DefaultMode: src.Secret.DefaultMode, Optional: optionalBool(src.Secret.Optional)}}
		case src.DownwardAPI != nil:
			sv.Source = &syncpodv1.Volume_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIVolumeSource{
				Items: c.downwardItems(path+".downwardAPI.items", src.DownwardAPI.Items), DefaultMode: src.DownwardAPI.DefaultMode}}
		case src.Projected != nil:
			pv := &syncpodv1.ProjectedVolumeSource{DefaultMode: src.Projected.DefaultMode}
			for j, s := range src.Projected.Sources {
				sp := fmt.Sprintf("%s.projected.sources[%d]", path, j)
				vp := &syncpodv1.VolumeProjection{}
				switch {
				case s.ConfigMap != nil:
					vp.Source = &syncpodv1.VolumeProjection_ConfigMap{ConfigMap: &syncpodv1.ConfigMapProjection{
						Name: s.ConfigMap.Name, Items: keyToPaths(s.ConfigMap.Items), Optional: optionalBool(s.ConfigMap.Optional)}}
				case s.Secret != nil:
					vp.Source = &syncpodv1.VolumeProjection_Secret{Secret: &syncpodv1.SecretProjection{
						Name: s.Secret.Name, Items: keyToPaths(s.Secret.Items), Optional: optionalBool(s.Secret.Optional)}}
				case s.DownwardAPI != nil:
					vp.Source = &syncpodv1.VolumeProjection_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIProjection{
						Items: c.downwardItems(sp+".downwardAPI.items", s.DownwardAPI.Items)}}
				case s.ServiceAccountToken != nil:
					// only the API server issues tokens; the node
					// agent obtains them for its pods.
					if !c.fromAPI {
						c.errorf(sp+".serviceAccountToken", "%s", unsupportedMessage(sp+".serviceAccountToken"))
					}
					t := &syncpodv1.ServiceAccountTokenProjection{Audience: s.ServiceAccountToken.Audience, Path: s.ServiceAccountToken.Path}
					if e := s.ServiceAccountToken.ExpirationSeconds; e != nil {
						t.ExpirationSeconds = *e
					}
					vp.Source = &syncpodv1.VolumeProjection_ServiceAccountToken{ServiceAccountToken: t}
				}
				pv.Sources = append(pv.Sources, vp)
			}
			sv.Source = &syncpodv1.Volume_Projected{Projected: pv}
		default:
			// emptyDir, set or (as the API server defaults a volume that
			// names no source) not.
			ed := &syncpodv1.EmptyDirVolumeSource{}
			if e := src.EmptyDir; e != nil {
				switch e.Medium {
				case corev1.StorageMediumDefault:
				case corev1.StorageMediumMemory:
					ed.Medium = syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY
				default:
					c.errorf(path+".emptyDir.medium", "must be \"\" or Memory, got %q", e.Medium)
				}
				if e.SizeLimit != nil {
					ed.SizeLimit = e.SizeLimit.String()
				}
			}
			sv.Source = &syncpodv1.Volume_EmptyDir{EmptyDir: ed}
		}
		out = append(out, sv)
	}
	return out
}

// pullPolicy converts a container's or an image volume's pull policy;
// "" stays unspecified (the default by tag).
func (c *converter) pullPolicy(path string, p corev1.PullPolicy) syncpodv1.ImagePullPolicy {
	switch p {
	case "":
	case corev1.PullAlways:
		return syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS
	case corev1.PullIfNotPresent:
		return syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT
	case corev1.PullNever:
		return syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER
	default:
		c.errorf(path, "must be Always, IfNotPresent or Never, got %q", p)
	}
	return syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_UNSPECIFIED
}

func (c *converter) volumeMounts(path string, mounts []corev1.VolumeMount) []*syncpodv1.VolumeMount {
	var out []*syncpodv1.VolumeMount
	for i, m := range mounts {
		vm := &syncpodv1.VolumeMount{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly, SubPath: m.SubPath, SubPathExpr: m.SubPathExpr}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case corev1.MountPropagationNone:
				vm.MountPropagation = syncpodv1.MountPropagation_MOUNT_PROPAGATION_NONE
			case corev1.MountPropagationHostToContainer:
				vm.MountPropagation = syncpodv1.MountPropagation_MOUNT_PROPAGATION_HOST_TO_CONTAINER
			case corev1.MountPropagationBidirectional:
				vm.MountPropagation = syncpodv1.MountPropagation_MOUNT_PROPAGATION_BIDIRECTIONAL
			default:
				c.errorf(fmt.Sprintf("%s.volumeMounts[%d].mountPropagation", path, i), "must be None, HostToContainer or Bidirectional, got %q", *m.MountPropagation)
			}
		}
		out = append(out, vm)
	}
	return out
}

func (c *converter) envFrom(list []corev1.EnvFromSource) []*syncpodv1.EnvFromSource {
	var out []*syncpodv1.EnvFromSource
	for _, e := range list {
		ef := &syncpodv1.EnvFromSource{Prefix: e.Prefix}
		if e.ConfigMapRef != nil {
			ef.ConfigMapRef = &syncpodv1.ConfigMapEnvSource{Name: e.ConfigMapRef.Name, Optional: optionalBool(e.ConfigMapRef.Optional)}
		}
		if e.SecretRef != nil {
			ef.SecretRef = &syncpodv1.SecretEnvSource{Name: e.SecretRef.Name, Optional: optionalBool(e.SecretRef.Optional)}
		}
		out = append(out, ef)
	}
	return out
}

func (c *converter) envValueFrom(path string, vf *corev1.EnvVarSource) *syncpodv1.EnvVarSource {
	if vf == nil {
		return nil
	}
	out := &syncpodv1.EnvVarSource{}
	switch {
	case vf.FieldRef != nil:
		c.apiVersion(path+".fieldRef.apiVersion", vf.FieldRef.APIVersion)
		out.Source = &syncpodv1.EnvVarSource_FieldRef{FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: vf.FieldRef.FieldPath}}
	case vf.ResourceFieldRef != nil:
		out.Source = &syncpodv1.EnvVarSource_ResourceFieldRef{ResourceFieldRef: c.resourceFieldRef(vf.ResourceFieldRef)}
	case vf.ConfigMapKeyRef != nil:
		out.Source = &syncpodv1.EnvVarSource_ConfigMapKeyRef{ConfigMapKeyRef: &syncpodv1.ConfigMapKeySelector{
			Name: vf.ConfigMapKeyRef.Name, Key: vf.ConfigMapKeyRef.Key, Optional: optionalBool(vf.ConfigMapKeyRef.Optional)}}
	case vf.SecretKeyRef != nil:
		out.Source = &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{
			Name: vf.SecretKeyRef.Name, Key: vf.SecretKeyRef.Key, Optional: optionalBool(vf.SecretKeyRef.Optional)}}
	case vf.FileKeyRef != nil:
		f := vf.FileKeyRef
		out.Source = &syncpodv1.EnvVarSource_FileKeyRef{FileKeyRef: &syncpodv1.FileKeySelector{
			VolumeName: f.VolumeName, Path: f.Path, Key: f.Key, Optional: optionalBool(f.Optional)}}
	}
	return out
}
