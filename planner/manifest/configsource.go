package manifest

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ConfigChange is one ConfigMap or Secret of the manifest directory added,
// updated or removed. Exactly one of ConfigMap and Secret is set.
type ConfigChange struct {
	// Type of the change.
	Type ChangeType
	// File that defines (or defined) the object.
	File string
	// ConfigMap changed, or nil.
	ConfigMap *syncpodv1.ConfigMap
	// Secret changed, or nil.
	Secret *syncpodv1.Secret
}

// Key is "configmap/<namespace>/<name>" or "secret/<namespace>/<name>".
func (c ConfigChange) Key() string {
	if c.ConfigMap != nil {
		return configKey("configmap", c.ConfigMap.GetNamespace(), c.ConfigMap.GetName())
	}
	return configKey("secret", c.Secret.GetNamespace(), c.Secret.GetName())
}

type ownedConfig struct {
	cm   *syncpodv1.ConfigMap
	sec  *syncpodv1.Secret
	file string
}

func configKey(kind, ns, name string) string {
	if ns == "" {
		ns = "default"
	}
	return kind + "/" + ns + "/" + name
}

// diffConfigs computes the desired ConfigMaps and Secrets from the files'
// last good parses (the first file by name wins a name defined twice,
// unless the previous owner still defines it) and appends the changes.
func (s *Source) diffConfigs(diff *Diff) {
	files := make([]string, 0, len(s.files))
	for path := range s.files {
		files = append(files, path)
	}
	sort.Strings(files)
	desired := map[string]ownedConfig{}
	add := func(k string, oc ownedConfig) {
		cur, ok := desired[k]
		if !ok {
			desired[k] = oc
			return
		}
		if cur.file == oc.file {
			return // duplicate within one file: first wins
		}
		if prev, had := s.configs[k]; had && prev.file == oc.file {
			desired[k] = oc
			cur, oc = oc, cur
		}
		diff.Errors = append(diff.Errors, FileError{File: oc.file, Err: fmt.Errorf("%s is already defined in %s; ignored here", k, cur.file)})
	}
	for _, path := range files {
		st := s.files[path]
		for _, c := range st.cms {
			add(configKey("configmap", c.GetNamespace(), c.GetName()), ownedConfig{cm: c, file: path})
		}
		for _, x := range st.secs {
			add(configKey("secret", x.GetNamespace(), x.GetName()), ownedConfig{sec: x, file: path})
		}
	}
	for k, d := range desired {
		prev, ok := s.configs[k]
		ch := ConfigChange{File: d.file, ConfigMap: d.cm, Secret: d.sec}
		switch {
		case !ok:
			ch.Type = Added
		case !proto.Equal(prev.cm, d.cm) || !proto.Equal(prev.sec, d.sec):
			ch.Type = Updated
		default:
			continue
		}
		diff.ConfigChanges = append(diff.ConfigChanges, ch)
	}
	for k, prev := range s.configs {
		if _, ok := desired[k]; !ok {
			diff.ConfigChanges = append(diff.ConfigChanges, ConfigChange{Type: Removed, File: prev.file, ConfigMap: prev.cm, Secret: prev.sec})
		}
	}
	s.configs = desired
	sort.Slice(diff.ConfigChanges, func(i, j int) bool { return diff.ConfigChanges[i].Key() < diff.ConfigChanges[j].Key() })
}

// RetryConfig makes the next Scan report config changes again that were
// not carried out.
func (s *Source) RetryConfig(failed []ConfigChange) {
	for _, c := range failed {
		switch c.Type {
		case Added, Updated:
			delete(s.configs, c.Key())
		case Removed:
			s.configs[c.Key()] = ownedConfig{cm: c.ConfigMap, sec: c.Secret, file: c.File}
		}
	}
}
