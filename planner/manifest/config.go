package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Objects are the documents of a manifest file by kind.
type Objects struct {
	// Pods in file order.
	Pods []*syncpodv1.Pod
	// APIReferences holds, for each of Pods, the kind of Kubernetes API
	// object it refers to as the kubelet names it ("configmaps",
	// "serviceaccounts", ...), "" for none.
	APIReferences []string
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
			var ref string
			p, is, ref = parseDocument(doc)
			if p != nil {
				out.Pods = append(out.Pods, p)
				out.APIReferences = append(out.APIReferences, ref)
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
	js, err := toJSON(doc)
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

// parseConfigDocument converts one ConfigMap or Secret document: the
// same decoding, checks and issues for both kinds (a key that is no field
// of the Kubernetes type is unknown, with the closest field name, as in a
// pod), then the kind's conversion.
func parseConfigDocument(doc []byte, kind string) (*syncpodv1.ConfigMap, *syncpodv1.Secret, []Issue) {
	js, err := toJSON(doc)
	if err != nil {
		return nil, nil, []Issue{{Path: "(document)", Message: "not YAML or JSON: " + err.Error(), Severity: Error}}
	}
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, []Issue{{Path: "(document)", Message: err.Error(), Severity: Error}}
	}
	var (
		cm     corev1.ConfigMap
		sec    corev1.Secret
		target metav1.Object = &cm
	)
	if kind == "Secret" {
		target = &sec
	}
	issues := walk("", raw, configSchema(kind), reflect.TypeOf(target))
	if err := json.Unmarshal(js, target); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, nil, append(issues, Issue{Path: te.Field, Message: fmt.Sprintf("cannot be a JSON %s (want %s)", te.Value, te.Type), Severity: Error})
		}
		// Never echo the input: a Secret's base64 error would quote it.
		return nil, nil, append(issues, Issue{Path: "data", Message: "values must be base64 (data, binaryData) or strings (stringData)", Severity: Error})
	}
	if target.GetName() == "" {
		issues = append(issues, Issue{Path: "metadata.name", Message: "required", Severity: Error})
	}
	for _, x := range issues {
		if x.Severity == Error {
			return nil, nil, issues
		}
	}
	if kind == "ConfigMap" {
		return configMapOf(&cm), nil, issues
	}
	return nil, secretOf(&sec), issues
}

func configMapOf(k *corev1.ConfigMap) *syncpodv1.ConfigMap {
	return &syncpodv1.ConfigMap{Name: k.Name, Namespace: k.Namespace, Uid: string(k.UID), Labels: k.Labels,
		Annotations: k.Annotations, Data: k.Data, BinaryData: k.BinaryData, Immutable: k.Immutable != nil && *k.Immutable}
}

func secretOf(k *corev1.Secret) *syncpodv1.Secret {
	s := &syncpodv1.Secret{Name: k.Name, Namespace: k.Namespace, Uid: string(k.UID), Labels: k.Labels,
		Annotations: k.Annotations, Type: string(k.Type), Data: map[string][]byte{}, Immutable: k.Immutable != nil && *k.Immutable}
	maps.Copy(s.Data, k.Data)
	for key, v := range k.StringData { // stringData wins, as with the API server
		s.Data[key] = []byte(v)
	}
	return s
}
