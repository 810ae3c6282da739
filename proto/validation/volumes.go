package validation

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Bounds of volumes, mounts and config objects.
const (
	// MaxVolumes bounds a pod's volumes.
	MaxVolumes = 256
	// MaxVolumeMounts bounds a container's volume mounts.
	MaxVolumeMounts = 256
	// MaxEnvFrom bounds a container's env_from sources.
	MaxEnvFrom = 64
	// MaxProjectionItems bounds the items of one volume source.
	MaxProjectionItems = 1024
	// MaxConfigBytes bounds a ConfigMap's or Secret's data in total, as
	// the API server does (1 MiB).
	MaxConfigBytes = 1 << 20
)

// The patterns are compiled at their first use, not at package
// initialisation: a process that never checks such a field (syncpodctl)
// does not pay for them.
var (
	configKeyRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-._a-zA-Z0-9]+$`) })
	fieldPathRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^metadata\.(labels|annotations)\['[^']*'\]$`) })
	envFieldPath = map[string]bool{
		"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
		"spec.nodeName": true, "spec.serviceAccountName": true,
		"status.podIP": true, "status.podIPs": true, "status.hostIP": true, "status.hostIPs": true,
	}
	volumeFieldPath = map[string]bool{
		"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
		"metadata.labels": true, "metadata.annotations": true,
	}
	resourceNames = map[string]bool{"limits.cpu": true, "limits.memory": true, "requests.cpu": true, "requests.memory": true}
)

// ConfigKeyProblem says what is wrong with a ConfigMap or Secret key, or "".
func ConfigKeyProblem(k string) string {
	switch {
	case k == "" || len(k) > MaxNameLen:
		return fmt.Sprintf("must be 1 to %d characters", MaxNameLen)
	case k == "." || k == "..":
		return "must not be '.' or '..'"
	case strings.HasPrefix(k, ".."):
		return "must not start with '..'"
	case !configKeyRE().MatchString(k):
		return "must consist of letters, digits, '-', '_' or '.'"
	}
	return ""
}

// podVolumes checks spec.volumes and, for every container, its
// volume_mounts, env_from and env[].value_from.
//
// fromAPI says the pod comes from the Kubernetes API server, the only
// source of pods that may have service account tokens.
func (l *list) podVolumes(s *syncpodv1.PodSpec, fromAPI bool) {
	vols := s.GetVolumes()
	if len(vols) > MaxVolumes {
		l.Add("spec.volumes", "%d entries exceed the limit of %d", len(vols), MaxVolumes)
		return
	}
	names := map[string]*syncpodv1.Volume{}
	for i, v := range vols {
		p := fmt.Sprintf("spec.volumes[%d]", i)
		switch n := v.GetName(); {
		case n == "":
			l.Add(p+".name", "required")
		case !isDNS1123Label(n):
			l.Add(p+".name", "must be a DNS-1123 label")
		default:
			if _, dup := names[n]; dup {
				l.Add(p+".name", "duplicate volume name %s", fielderr.Quote(n))
			}
			names[n] = v
		}
		l.volumeSource(p, v, fromAPI)
	}
	for i, c := range s.GetInitContainers() {
		l.containerVolumes(fmt.Sprintf("spec.init_containers[%d]", i), c, names)
	}
	for i, c := range s.GetContainers() {
		l.containerVolumes(fmt.Sprintf("spec.containers[%d]", i), c, names)
	}
	for i, c := range s.GetEphemeralContainers() {
		l.containerVolumes(fmt.Sprintf("spec.ephemeral_containers[%d]", i), c, names)
	}
}

func (l *list) volumeSource(p string, v *syncpodv1.Volume, fromAPI bool) {
	switch src := v.GetSource().(type) {
	case nil:
		l.Add(p, "exactly one source is required (emptyDir, hostPath, configMap, secret, projected, downwardAPI or image)")
	case *syncpodv1.Volume_EmptyDir:
		if _, ok := syncpodv1.StorageMedium_name[int32(src.EmptyDir.GetMedium())]; !ok {
			l.Add(p+".empty_dir.medium", "unknown value %d", src.EmptyDir.GetMedium())
		}
		l.quantity(p+".empty_dir.size_limit", src.EmptyDir.GetSizeLimit())
	case *syncpodv1.Volume_HostPath:
		hp := src.HostPath.GetPath()
		switch {
		case hp == "":
			l.Add(p+".host_path.path", "required")
		case !path.IsAbs(hp):
			l.Add(p+".host_path.path", "must be an absolute path")
		case hasDotDot(hp):
			l.Add(p+".host_path.path", "must not contain '..'")
		}
		l.maxLen(p+".host_path.path", hp, MaxPathLen)
		if _, ok := syncpodv1.HostPathType_name[int32(src.HostPath.GetType())]; !ok {
			l.Add(p+".host_path.type", "unknown value %d", src.HostPath.GetType())
		}
	case *syncpodv1.Volume_ConfigMap:
		l.objectName(p+".config_map.name", src.ConfigMap.GetName())
		l.items(p+".config_map", src.ConfigMap.GetItems())
		l.mode(p+".config_map.default_mode", src.ConfigMap.DefaultMode)
	case *syncpodv1.Volume_Secret:
		l.objectName(p+".secret.secret_name", src.Secret.GetSecretName())
		l.items(p+".secret", src.Secret.GetItems())
		l.mode(p+".secret.default_mode", src.Secret.DefaultMode)
	case *syncpodv1.Volume_DownwardApi:
		l.downwardItems(p+".downward_api", src.DownwardApi.GetItems())
		l.mode(p+".downward_api.default_mode", src.DownwardApi.DefaultMode)
	case *syncpodv1.Volume_Image:
		switch ref := src.Image.GetReference(); {
		case ref == "":
			l.Add(p+".image.reference", "required")
		case len(ref) > MaxImageLen:
			l.Add(p+".image.reference", "%d bytes exceed the limit of %d", len(ref), MaxImageLen)
		case hasSpace(ref):
			l.Add(p+".image.reference", "must not contain whitespace")
		}
		if _, ok := syncpodv1.ImagePullPolicy_name[int32(src.Image.GetPullPolicy())]; !ok {
			l.Add(p+".image.pull_policy", "unknown value %d", src.Image.GetPullPolicy())
		}
	case *syncpodv1.Volume_Projected:
		l.mode(p+".projected.default_mode", src.Projected.DefaultMode)
		for j, s := range src.Projected.GetSources() {
			sp := fmt.Sprintf("%s.projected.sources[%d]", p, j)
			switch x := s.GetSource().(type) {
			case nil:
				l.Add(sp, "exactly one of config_map, secret, downward_api and service_account_token is required")
			case *syncpodv1.VolumeProjection_ConfigMap:
				l.objectName(sp+".config_map.name", x.ConfigMap.GetName())
				l.items(sp+".config_map", x.ConfigMap.GetItems())
			case *syncpodv1.VolumeProjection_Secret:
				l.objectName(sp+".secret.name", x.Secret.GetName())
				l.items(sp+".secret", x.Secret.GetItems())
			case *syncpodv1.VolumeProjection_DownwardApi:
				l.downwardItems(sp+".downward_api", x.DownwardApi.GetItems())
			case *syncpodv1.VolumeProjection_ServiceAccountToken:
				l.serviceAccountToken(sp+".service_account_token", x.ServiceAccountToken, fromAPI)
			}
		}
	}
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

func (l *list) quantity(p, q string) {
	if q == "" {
		return
	}
	if len(q) > MaxQuantityLen {
		l.Add(p, "longer than %d characters", MaxQuantityLen)
		return
	}
	if v, err := resource.ParseQuantity(q); err != nil {
		l.Add(p, "must be a quantity, e.g. 64Mi (got %s)", fielderr.Quote(q))
	} else if v.Sign() < 0 {
		l.Add(p, "must not be negative")
	}
}

func (l *list) objectName(p, n string) {
	if n == "" {
		l.Add(p, "required")
		return
	}
	l.check(p, NameProblem(n))
}

func (l *list) mode(p string, m *int32) {
	if m != nil && (*m < 0 || *m > 0o777) {
		l.Add(p, "must be a file mode between 0 and 0777 (octal), got %d", *m)
	}
}

// relPath checks a projected file path: relative, no '..' component, not
// starting with "..".
func (l *list) relPath(p, rel string) {
	switch {
	case rel == "":
		l.Add(p, "required")
	case path.IsAbs(rel):
		l.Add(p, "must be a relative path")
	case hasDotDot(rel):
		l.Add(p, "must not contain '..'")
	case strings.HasPrefix(rel, ".."):
		l.Add(p, "must not start with '..'")
	}
	l.maxLen(p, rel, MaxPathLen)
}

func (l *list) items(p string, items []*syncpodv1.KeyToPath) {
	if len(items) > MaxProjectionItems {
		l.Add(p+".items", "%d entries exceed the limit of %d", len(items), MaxProjectionItems)
		return
	}
	for i, it := range items {
		ip := fmt.Sprintf("%s.items[%d]", p, i)
		l.check(ip+".key", ConfigKeyProblem(it.GetKey()))
		l.relPath(ip+".path", it.GetPath())
		l.mode(ip+".mode", it.Mode)
	}
}

func (l *list) downwardItems(p string, items []*syncpodv1.DownwardAPIVolumeFile) {
	if len(items) > MaxProjectionItems {
		l.Add(p+".items", "%d entries exceed the limit of %d", len(items), MaxProjectionItems)
		return
	}
	for i, it := range items {
		ip := fmt.Sprintf("%s.items[%d]", p, i)
		l.relPath(ip+".path", it.GetPath())
		l.mode(ip+".mode", it.Mode)
		switch {
		case (it.GetFieldRef() != nil) == (it.GetResourceFieldRef() != nil):
			l.Add(ip, "exactly one of field_ref and resource_field_ref is required")
		case it.GetFieldRef() != nil:
			fp := it.GetFieldRef().GetFieldPath()
			if !volumeFieldPath[fp] && !fieldPathRE().MatchString(fp) {
				l.Add(ip+".field_ref.field_path", "unsupported %s: a volume accepts metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations and metadata.labels['k'] / metadata.annotations['k']", fielderr.Quote(fp))
			}
		default:
			rf := it.GetResourceFieldRef()
			if rf.GetContainerName() == "" {
				l.Add(ip+".resource_field_ref.container_name", "required in a volume")
			}
			l.resourceField(ip+".resource_field_ref", rf)
		}
	}
}

func (l *list) resourceField(p string, rf *syncpodv1.ResourceFieldSelector) {
	if !resourceNames[rf.GetResource()] {
		l.Add(p+".resource", "must be limits.cpu, limits.memory, requests.cpu or requests.memory, got %s", fielderr.Quote(rf.GetResource()))
	}
	l.quantity(p+".divisor", rf.GetDivisor())
	if d := rf.GetDivisor(); d != "" {
		if q, err := resource.ParseQuantity(d); err == nil && q.IsZero() {
			l.Add(p+".divisor", "must not be 0")
		}
	}
}

func (l *list) containerVolumes(p string, c *syncpodv1.Container, vols map[string]*syncpodv1.Volume) {
	mounts := c.GetVolumeMounts()
	if len(mounts) > MaxVolumeMounts {
		l.Add(p+".volume_mounts", "%d entries exceed the limit of %d", len(mounts), MaxVolumeMounts)
		mounts = nil
	}
	paths := map[string]string{}
	for i, m := range mounts {
		mp := fmt.Sprintf("%s.volume_mounts[%d]", p, i)
		switch n := m.GetName(); {
		case n == "":
			l.Add(mp+".name", "required")
		case vols[n] == nil:
			l.Add(mp+".name", "no volume %s in spec.volumes", fielderr.Quote(n))
		}
		switch cp := m.GetMountPath(); {
		case cp == "":
			l.Add(mp+".mount_path", "required")
		case !path.IsAbs(cp):
			l.Add(mp+".mount_path", "must be an absolute path")
		case strings.Contains(cp, ":"):
			l.Add(mp+".mount_path", "must not contain ':'")
		default:
			clean := path.Clean(cp)
			if prev, dup := paths[clean]; dup {
				l.Add(mp+".mount_path", "must be unique (also %s)", prev)
			}
			paths[clean] = mp + ".mount_path"
		}
		l.maxLen(mp+".mount_path", m.GetMountPath(), MaxPathLen)
		if sp := m.GetSubPath(); sp != "" {
			switch {
			case path.IsAbs(sp):
				l.Add(mp+".sub_path", "must be a relative path")
			case hasDotDot(sp):
				l.Add(mp+".sub_path", "must not contain '..'")
			}
			l.maxLen(mp+".sub_path", sp, MaxPathLen)
		}
		if se := m.GetSubPathExpr(); se != "" {
			if m.GetSubPath() != "" {
				l.Add(mp+".sub_path_expr", "sub_path_expr and sub_path are mutually exclusive")
			}
			switch {
			case path.IsAbs(se):
				l.Add(mp+".sub_path_expr", "must be a relative path")
			case hasDotDot(se):
				l.Add(mp+".sub_path_expr", "must not contain '..'")
			}
			l.maxLen(mp+".sub_path_expr", se, MaxPathLen)
		}
		if _, ok := syncpodv1.MountPropagation_name[int32(m.GetMountPropagation())]; !ok {
			l.Add(mp+".mount_propagation", "unknown value %d", m.GetMountPropagation())
		}
	}
	ef := c.GetEnvFrom()
	if len(ef) > MaxEnvFrom {
		l.Add(p+".env_from", "%d entries exceed the limit of %d", len(ef), MaxEnvFrom)
		ef = nil
	}
	for i, e := range ef {
		ep := fmt.Sprintf("%s.env_from[%d]", p, i)
		switch {
		case (e.GetConfigMapRef() != nil) == (e.GetSecretRef() != nil):
			l.Add(ep, "exactly one of config_map_ref and secret_ref is required")
		case e.GetConfigMapRef() != nil:
			l.objectName(ep+".config_map_ref.name", e.GetConfigMapRef().GetName())
		default:
			l.objectName(ep+".secret_ref.name", e.GetSecretRef().GetName())
		}
		if pre := e.GetPrefix(); pre != "" && !isEnvName(pre) {
			l.Add(ep+".prefix", "%s", envNameRule)
		}
	}
	env := c.GetEnv()
	if len(env) > MaxEnv {
		return // reported by container()
	}
	for i, e := range env {
		vf := e.GetValueFrom()
		if vf == nil {
			continue
		}
		ep := fmt.Sprintf("%s.env[%d]", p, i)
		if e.GetValue() != "" {
			l.Add(ep+".value_from", "may not be set together with a non-empty value")
		}
		vp := ep + ".value_from"
		switch x := vf.GetSource().(type) {
		case nil:
			l.Add(vp, "exactly one of field_ref, resource_field_ref, config_map_key_ref, secret_key_ref and file_key_ref is required")
		case *syncpodv1.EnvVarSource_FieldRef:
			fp := x.FieldRef.GetFieldPath()
			if !envFieldPath[fp] && !fieldPathRE().MatchString(fp) {
				l.Add(vp+".field_ref.field_path", "unsupported %s: env accepts metadata.name, metadata.namespace, metadata.uid, metadata.labels['k'], metadata.annotations['k'], spec.nodeName, spec.serviceAccountName, status.podIP, status.podIPs, status.hostIP, status.hostIPs", fielderr.Quote(fp))
			}
		case *syncpodv1.EnvVarSource_ResourceFieldRef:
			l.resourceField(vp+".resource_field_ref", x.ResourceFieldRef)
		case *syncpodv1.EnvVarSource_ConfigMapKeyRef:
			l.objectName(vp+".config_map_key_ref.name", x.ConfigMapKeyRef.GetName())
			l.check(vp+".config_map_key_ref.key", ConfigKeyProblem(x.ConfigMapKeyRef.GetKey()))
		case *syncpodv1.EnvVarSource_SecretKeyRef:
			l.objectName(vp+".secret_key_ref.name", x.SecretKeyRef.GetName())
			l.check(vp+".secret_key_ref.key", ConfigKeyProblem(x.SecretKeyRef.GetKey()))
		case *syncpodv1.EnvVarSource_FileKeyRef:
			l.fileKeyRef(vp+".file_key_ref", x.FileKeyRef, vols)
		}
	}
}

// fileKeyRef checks an env file selector as the API server does:
// a key that is an environment variable name, a path without "..", and
// the name of one of the pod's emptyDir volumes.
func (l *list) fileKeyRef(p string, f *syncpodv1.FileKeySelector, vols map[string]*syncpodv1.Volume) {
	if k := f.GetKey(); k == "" {
		l.Add(p+".key", "required")
	} else {
		l.check(p+".key", EnvNameProblem(k))
		l.maxLen(p+".key", k, MaxEnvNameLen)
	}
	switch n := f.GetVolumeName(); {
	case n == "":
		l.Add(p+".volume_name", "required")
	case vols[n] == nil:
		l.Add(p+".volume_name", "no volume %s in spec.volumes", fielderr.Quote(n))
	case vols[n].GetEmptyDir() == nil:
		l.Add(p+".volume_name", "volume %s must be an emptyDir: an env file is read from an emptyDir volume only", fielderr.Quote(n))
	}
	switch fp := f.GetPath(); {
	case fp == "":
		l.Add(p+".path", "required")
	case hasDotDot(fp):
		l.Add(p+".path", "must not contain '..'")
	default:
		l.maxLen(p+".path", fp, MaxPathLen)
	}
}
