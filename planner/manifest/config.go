package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Objects are the documents of a manifest file by kind.
type Objects struct {
	// Pods in file order.
	Pods []*syncpodv1.Pod
	// ConfigMaps in file order.
	ConfigMaps []*syncpodv1.ConfigMap
	// Secrets in file order.
	Secrets []*syncpodv1.Secret
}

// Empty reports a file with no object.
func (o Objects) Empty() bool { return len(o.Pods)+len(o.ConfigMaps)+len(o.Secrets) == 0 }

// ParseObjects converts the Pod, ConfigMap and Secret documents in data,
// all or nothing as Parse. Secret values never appear in an Issue.
func ParseObjects(data []byte) (Objects, []Issue, error) {
	var out Objects
	if len(data) > MaxSize {
		return out, nil, &ParseError{Issues: []Issue{{Path: "(file)", Message: fmt.Sprintf("larger than %d bytes", MaxSize), Severity: Error}}}
	}
	var errs, warns []Issue
	for i, doc := range splitDocuments(data) {
		var is []Issue
		switch kind := documentKind(doc); kind {
		case "ConfigMap", "Secret":
			var cm *syncpodv1.ConfigMap
			var sec *syncpodv1.Secret
			cm, sec, is = parseConfigDocument(doc, kind)
			if cm != nil {
				out.ConfigMaps = append(out.ConfigMaps, cm)
			}
			if sec != nil {
				out.Secrets = append(out.Secrets, sec)
			}
		default:
			var p *syncpodv1.Pod
			p, is = parseDocument(doc)
			if p != nil {
				out.Pods = append(out.Pods, p)
			}
		}
		for _, x := range is {
			x.Doc = i
			if x.Severity == Error {
				errs = append(errs, x)
			} else {
				warns = append(warns, x)
			}
		}
	}
	if len(errs) > 0 {
		return Objects{}, warns, &ParseError{Issues: errs}
	}
	return out, warns, nil
}

// documentKind is the document's kind when it is a v1 ConfigMap or
// Secret, "" otherwise (the Pod parser reports what is wrong).
func documentKind(doc []byte) string {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return ""
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if json.Unmarshal(js, &head) != nil || head.APIVersion != "v1" {
		return ""
	}
	if head.Kind == "ConfigMap" || head.Kind == "Secret" {
		return head.Kind
	}
	return ""
}

func configSchema(kind string) *schema {
	meta := obj(map[string]*schema{
		"name": leaf(), "namespace": leaf(), "uid": leaf(), "labels": freeMap(), "annotations": freeMap(),
	})
	f := map[string]*schema{"apiVersion": leaf(), "kind": leaf(), "metadata": meta, "immutable": leaf(), "data": freeMap()}
	if kind == "ConfigMap" {
		f["binaryData"] = freeMap()
	} else {
		f["stringData"] = freeMap()
		f["type"] = leaf()
	}
	return obj(f)
}

// parseConfigDocument converts one ConfigMap or Secret document.
func parseConfigDocument(doc []byte, kind string) (*syncpodv1.ConfigMap, *syncpodv1.Secret, []Issue) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, nil, []Issue{{Path: "(document)", Message: "not YAML or JSON: " + err.Error(), Severity: Error}}
	}
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, []Issue{{Path: "(document)", Message: err.Error(), Severity: Error}}
	}
	issues := walk("", raw, configSchema(kind), nil) // nil: no Kubernetes type, unknown keys are "not supported"
	typeErr := func(err error) []Issue {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return append(issues, Issue{Path: te.Field, Message: fmt.Sprintf("cannot be a JSON %s (want %s)", te.Value, te.Type), Severity: Error})
		}
		// Never echo the input: a Secret's base64 error would quote it.
		return append(issues, Issue{Path: "data", Message: "values must be base64 (data, binaryData) or strings (stringData)", Severity: Error})
	}
	hasErr := func(is []Issue) bool {
		for _, x := range is {
			if x.Severity == Error {
				return true
			}
		}
		return false
	}
	if kind == "ConfigMap" {
		var k corev1.ConfigMap
		if err := json.Unmarshal(js, &k); err != nil {
			return nil, nil, typeErr(err)
		}
		if k.Name == "" {
			issues = append(issues, Issue{Path: "metadata.name", Message: "required", Severity: Error})
		}
		if hasErr(issues) {
			return nil, nil, issues
		}
		c := &syncpodv1.ConfigMap{Name: k.Name, Namespace: k.Namespace, Uid: string(k.UID), Labels: k.Labels,
			Annotations: k.Annotations, Data: k.Data, BinaryData: k.BinaryData}
		if k.Immutable != nil {
			c.Immutable = *k.Immutable
		}
		return c, nil, issues
	}
	var k corev1.Secret
	if err := json.Unmarshal(js, &k); err != nil {
		return nil, nil, typeErr(err)
	}
	if k.Name == "" {
		issues = append(issues, Issue{Path: "metadata.name", Message: "required", Severity: Error})
	}
	if hasErr(issues) {
		return nil, nil, issues
	}
	s := &syncpodv1.Secret{Name: k.Name, Namespace: k.Namespace, Uid: string(k.UID), Labels: k.Labels,
		Annotations: k.Annotations, Type: string(k.Type), Data: map[string][]byte{}}
	for key, v := range k.Data {
		s.Data[key] = v
	}
	for key, v := range k.StringData { // stringData wins, as with the API server
		s.Data[key] = []byte(v)
	}
	if k.Immutable != nil {
		s.Immutable = *k.Immutable
	}
	return nil, s, issues
}
