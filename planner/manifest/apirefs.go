package manifest

import corev1 "k8s.io/api/core/v1"

// apiObjectReference is the kind of Kubernetes API object pod kp refers
// to, as the kubelet names it in "static pods may not reference ..."
// or "" when it refers to none. The kubelet looks in this
// order: the service account, any Secret (image pull secrets, env, volumes,
// projected sources), any ConfigMap, resource claims, then the volumes
// that need the API.
func apiObjectReference(kp *corev1.Pod) string {
	s := &kp.Spec
	if s.ServiceAccountName != "" || s.DeprecatedServiceAccount != "" {
		return "serviceaccounts"
	}
	var secrets, configMaps []string
	for _, r := range s.ImagePullSecrets {
		secrets = append(secrets, r.Name)
	}
	visitEnv := func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, f := range from {
			if f.SecretRef != nil {
				secrets = append(secrets, f.SecretRef.Name)
			}
			if f.ConfigMapRef != nil {
				configMaps = append(configMaps, f.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				secrets = append(secrets, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				configMaps = append(configMaps, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for _, c := range append(append([]corev1.Container(nil), s.InitContainers...), s.Containers...) {
		visitEnv(c.Env, c.EnvFrom)
	}
	for _, c := range s.EphemeralContainers {
		visitEnv(c.Env, c.EnvFrom)
	}
	for _, v := range s.Volumes {
		switch {
		case v.Secret != nil:
			secrets = append(secrets, v.Secret.SecretName)
		case v.ConfigMap != nil:
			configMaps = append(configMaps, v.ConfigMap.Name)
		case v.AzureFile != nil:
			secrets = append(secrets, v.AzureFile.SecretName)
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			secrets = append(secrets, v.CSI.NodePublishSecretRef.Name)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.Secret != nil {
					secrets = append(secrets, p.Secret.Name)
				}
				if p.ConfigMap != nil {
					configMaps = append(configMaps, p.ConfigMap.Name)
				}
			}
		}
		for _, r := range []*corev1.LocalObjectReference{secretRefOf(v.VolumeSource)} {
			if r != nil {
				secrets = append(secrets, r.Name)
			}
		}
	}
	named := func(names []string) bool {
		for _, n := range names {
			if n != "" {
				return true
			}
		}
		return false
	}
	switch {
	case named(secrets):
		return "secrets"
	case named(configMaps):
		return "configmaps"
	case len(s.ResourceClaims) > 0:
		return "resourceclaims"
	}
	for _, v := range s.Volumes {
		switch {
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)"
		case v.Secret != nil:
			return "secrets (via secret volumes)"
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)"
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)"
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims"
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)"
		case v.AzureFile != nil:
			return "secrets (via azureFile volumes)"
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				switch {
				case p.ConfigMap != nil:
					return "configmaps (via projected volumes)"
				case p.Secret != nil:
					return "secrets (via projected volumes)"
				case p.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)"
				case p.ClusterTrustBundle != nil:
					return "clustertrustbundles"
				case p.PodCertificate != nil:
					return "podcertificates"
				}
			}
		}
	}
	return ""
}

// secretRefOf is the Secret a volume plugin's secretRef names, for the
// plugins that have one.
func secretRefOf(v corev1.VolumeSource) *corev1.LocalObjectReference {
	switch {
	case v.CephFS != nil:
		return v.CephFS.SecretRef
	case v.Cinder != nil:
		return v.Cinder.SecretRef
	case v.FlexVolume != nil:
		return v.FlexVolume.SecretRef
	case v.RBD != nil:
		return v.RBD.SecretRef
	case v.ISCSI != nil:
		return v.ISCSI.SecretRef
	case v.ScaleIO != nil:
		return v.ScaleIO.SecretRef
	case v.StorageOS != nil:
		return v.StorageOS.SecretRef
	}
	return nil
}
