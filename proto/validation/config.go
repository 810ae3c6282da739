package validation

import (
	"maps"
	"slices"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ConfigMap checks a ConfigMap: name, namespace, labels, keys (data and
// binary_data together unique) and total size. Every problem at once.
func ConfigMap(c *syncpodv1.ConfigMap) error {
	var l list
	if c == nil {
		l.Add("", "required")
		return l.Err()
	}
	l.objectMeta(c.GetName(), c.GetNamespace(), c.GetLabels())
	total := 0
	for _, k := range sortedKeys(c.GetData()) {
		l.check(MapPath("data", k), ConfigKeyProblem(k))
		total += len(k) + len(c.GetData()[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.GetBinaryData())) {
		v := c.GetBinaryData()[k]
		l.check(MapPath("binary_data", k), ConfigKeyProblem(k))
		if _, dup := c.GetData()[k]; dup {
			l.Add(MapPath("binary_data", k), "duplicate of data key")
		}
		total += len(k) + len(v)
	}
	if total > MaxConfigBytes {
		l.Add("data", "total size %d bytes exceeds %d", total, MaxConfigBytes)
	}
	return l.Err()
}

// Secret checks a Secret like a ConfigMap. Messages never quote values.
func Secret(s *syncpodv1.Secret) error {
	var l list
	if s == nil {
		l.Add("", "required")
		return l.Err()
	}
	l.objectMeta(s.GetName(), s.GetNamespace(), s.GetLabels())
	total := 0
	for _, k := range slices.Sorted(maps.Keys(s.GetData())) {
		v := s.GetData()[k]
		l.check(MapPath("data", k), ConfigKeyProblem(k))
		total += len(k) + len(v)
	}
	if total > MaxConfigBytes {
		l.Add("data", "total size %d bytes exceeds %d", total, MaxConfigBytes)
	}
	l.maxLen("type", s.GetType(), MaxNameLen)
	return l.Err()
}

func (l *list) objectMeta(name, ns string, labels map[string]string) {
	if name == "" {
		l.Add("name", "required")
	} else {
		l.check("name", NameProblem(name))
	}
	if ns != "" {
		l.check("namespace", NamespaceProblem(ns))
	}
	if len(labels) > MaxLabels {
		l.Add("labels", "%d entries exceed the limit of %d", len(labels), MaxLabels)
		return
	}
	for _, k := range sortedKeys(labels) {
		if msg := qualifiedNameProblem(k); msg != "" {
			l.Add(MapPath("labels", k), "%s", msg)
		}
		if !isLabelValue(labels[k]) {
			l.Add(MapPath("labels", k), "value must be a label value (at most 63 characters of letters, digits, '-', '_' or '.')")
		}
	}
}
