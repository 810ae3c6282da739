package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Severity says whether an Issue refuses the manifest.
type Severity int

const (
	// Error refuses the file.
	Error Severity = iota + 1
	// Warning is reported; the field is ignored and the pod accepted.
	Warning
)

// Issue is one problem found in a manifest, located by a field path.
type Issue struct {
	// Doc is the 0-based index of the document in the file.
	Doc int
	// Path is the field path, e.g. "spec.containers[0].volumeMounts".
	Path string
	// Message says what is wrong.
	Message string
	// Severity is Error or Warning.
	Severity Severity
}

func (i Issue) String() string {
	s := i.Path + ": " + i.Message
	if i.Doc > 0 {
		s = fmt.Sprintf("document %d: %s", i.Doc, s)
	}
	return s
}

// ErrInvalid classifies every ParseError.
var ErrInvalid = errors.New("invalid manifest")

// ParseError lists every error found in a manifest.
type ParseError struct {
	// Issues are the errors, in document then field order.
	Issues []Issue
}

func (e *ParseError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = is.String()
	}
	return strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ParseError) Unwrap() error { return ErrInvalid }

// MaxSize is the largest manifest accepted, in bytes.
const MaxSize = 1 << 20

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?\r?$`)

// Parse converts the Pod documents in data. It returns the pods, the
// warnings, and a *ParseError listing every error (then no pods). v1
// ConfigMap and Secret documents are parsed and checked too (an error in
// one refuses the file) but not returned: ParseObjects returns them.
func Parse(data []byte) ([]*syncpodv1.Pod, []Issue, error) {
	objs, warns, err := ParseObjects(data)
	if err != nil {
		return nil, warns, err
	}
	return objs.Pods, warns, nil
}

// splitDocuments splits YAML documents on "---" lines, dropping empty ones
// and a leading "%YAML"-free preamble. JSON never contains such a line
// outside a string, and a JSON string cannot span lines.
func splitDocuments(data []byte) [][]byte {
	var out [][]byte
	for _, d := range docSeparator.Split(string(data), -1) {
		out = append(out, []byte(d))
	}
	return out
}

// toJSON is a document as JSON: itself when it is a JSON object already
// (every pod from the API server, converted through here), which spares
// parsing it as YAML; else converted from YAML.
func toJSON(doc []byte) ([]byte, error) {
	if t := bytes.TrimSpace(doc); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t, nil
	}
	return yaml.YAMLToJSON(doc)
}

// parseDocument converts one document; a nil pod means an empty document
// or an error (reported in the issues). ref is the kind of API object the
// pod refers to (apiObjectReference), "" for none.
func parseDocument(doc []byte) (p *syncpodv1.Pod, issues []Issue, ref string) {
	js, err := toJSON(doc)
	if err != nil {
		return nil, []Issue{{Path: "(document)", Message: "not YAML or JSON: " + err.Error(), Severity: Error}}, ""
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil, nil, ""
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, []Issue{{Path: "(document)", Message: err.Error(), Severity: Error}}, ""
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, []Issue{{Path: "(document)", Message: "must be an object (a v1 Pod)", Severity: Error}}, ""
	}
	if v, _ := obj["apiVersion"].(string); v != "v1" {
		issues = append(issues, Issue{Path: "apiVersion", Message: fmt.Sprintf("must be \"v1\", got %q", v), Severity: Error})
	}
	if k, _ := obj["kind"].(string); k != "Pod" {
		issues = append(issues, Issue{Path: "kind", Message: fmt.Sprintf("must be \"Pod\", got %q", k), Severity: Error})
	}
	issues = append(issues, walk("", obj, podSchema(), reflect.TypeFor[corev1.Pod]())...)

	var kp corev1.Pod
	if err := json.Unmarshal(js, &kp); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, append(issues, Issue{Path: te.Field, Message: fmt.Sprintf("cannot be a JSON %s (want %s)", te.Value, te.Type), Severity: Error}), ""
		}
		return nil, append(issues, Issue{Path: "(document)", Message: err.Error(), Severity: Error}), ""
	}
	c := &converter{}
	p = c.pod(&kp)
	issues = append(issues, c.issues...)
	for _, is := range issues {
		if is.Severity == Error {
			return nil, issues, ""
		}
	}
	return p, issues, apiObjectReference(&kp)
}

type converter struct {
	issues []Issue
	// fromAPI says the pod comes from the Kubernetes API server (its
	// SourceAnnotation is "api"): the one source whose pods may have
	// service account tokens.
	fromAPI bool
}

func (c *converter) errorf(path, format string, args ...any) {
	c.issues = append(c.issues, Issue{Path: path, Message: fmt.Sprintf(format, args...), Severity: Error})
}

func (c *converter) pod(kp *corev1.Pod) *syncpodv1.Pod {
	p := &syncpodv1.Pod{
		Uid:         string(kp.UID),
		Name:        kp.Name,
		Namespace:   kp.Namespace,
		Labels:      kp.Labels,
		Annotations: kp.Annotations,
		Spec: &syncpodv1.PodSpec{
			TerminationGracePeriodSeconds: kp.Spec.TerminationGracePeriodSeconds,
			HostNetwork:                   kp.Spec.HostNetwork,
			Hostname:                      kp.Spec.Hostname,
		},
	}
	if p.Name == "" {
		c.errorf("metadata.name", "required")
	}
	switch kp.Spec.RestartPolicy {
	case "":
	case corev1.RestartPolicyAlways:
		p.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_ALWAYS
	case corev1.RestartPolicyOnFailure:
		p.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE
	case corev1.RestartPolicyNever:
		p.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
	default:
		c.errorf("spec.restartPolicy", "must be Always, OnFailure or Never, got %q", kp.Spec.RestartPolicy)
	}
	c.fromAPI = kp.Annotations[SourceAnnotation] == SourceAPI
	c.specExtras(kp, p.Spec)
	p.Spec.Volumes = c.volumes(kp.Spec.Volumes)
	for i := range kp.Spec.InitContainers {
		p.Spec.InitContainers = append(p.Spec.InitContainers, c.container(fmt.Sprintf("spec.initContainers[%d]", i), &kp.Spec.InitContainers[i]))
	}
	for i := range kp.Spec.Containers {
		p.Spec.Containers = append(p.Spec.Containers, c.container(fmt.Sprintf("spec.containers[%d]", i), &kp.Spec.Containers[i]))
	}
	for i := range kp.Spec.EphemeralContainers {
		// An ephemeral container has every field of a container (the
		// kubelet converts it the same way); the fields it may not set
		// are refused by validation with their path.
		ec := &kp.Spec.EphemeralContainers[i]
		out := c.container(fmt.Sprintf("spec.ephemeralContainers[%d]", i), (*corev1.Container)(&ec.EphemeralContainerCommon))
		out.TargetContainerName = ec.TargetContainerName
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, out)
	}
	return p
}

func (c *converter) container(path string, kc *corev1.Container) *syncpodv1.Container {
	out := &syncpodv1.Container{
		Name:       kc.Name,
		Image:      kc.Image,
		Command:    kc.Command,
		Args:       kc.Args,
		WorkingDir: kc.WorkingDir,
		Stdin:      kc.Stdin,
		StdinOnce:  kc.StdinOnce,
		Tty:        kc.TTY,
	}
	for i, e := range kc.Env {
		out.Env = append(out.Env, &syncpodv1.EnvVar{Name: e.Name, Value: e.Value,
			ValueFrom: c.envValueFrom(fmt.Sprintf("%s.env[%d].valueFrom", path, i), e.ValueFrom)})
	}
	out.EnvFrom = c.envFrom(kc.EnvFrom)
	out.VolumeMounts = c.volumeMounts(path, kc.VolumeMounts)
	out.ImagePullPolicy = c.pullPolicy(path+".imagePullPolicy", kc.ImagePullPolicy)
	if kc.RestartPolicy != nil {
		switch *kc.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			out.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
		case corev1.ContainerRestartPolicyOnFailure:
			out.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE
		case corev1.ContainerRestartPolicyNever:
			out.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
		default:
			c.errorf(path+".restartPolicy", "must be Always, OnFailure or Never, got %q", *kc.RestartPolicy)
		}
	}
	for i, r := range kc.RestartPolicyRules {
		rp := fmt.Sprintf("%s.restartPolicyRules[%d]", path, i)
		rule := &syncpodv1.ContainerRestartRule{}
		switch r.Action {
		case corev1.ContainerRestartRuleActionRestart:
			rule.Action = syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART
		case corev1.ContainerRestartRuleActionRestartAllContainers:
			rule.Action = syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS
		default:
			c.errorf(rp+".action", "must be Restart or RestartAllContainers, got %q", r.Action)
		}
		if r.ExitCodes != nil {
			rule.ExitCodes = &syncpodv1.ContainerRestartRuleOnExitCodes{Values: r.ExitCodes.Values}
			switch r.ExitCodes.Operator {
			case corev1.ContainerRestartRuleOnExitCodesOpIn:
				rule.ExitCodes.Operator = syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN
			case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
				rule.ExitCodes.Operator = syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_NOT_IN
			default:
				c.errorf(rp+".exitCodes.operator", "must be In or NotIn, got %q", r.ExitCodes.Operator)
			}
		}
		out.RestartPolicyRules = append(out.RestartPolicyRules, rule)
	}
	for i, kp := range kc.Ports {
		port := &syncpodv1.ContainerPort{Name: kp.Name, ContainerPort: kp.ContainerPort, HostPort: kp.HostPort, HostIp: kp.HostIP}
		switch kp.Protocol {
		case "":
		case corev1.ProtocolTCP:
			port.Protocol = syncpodv1.Protocol_PROTOCOL_TCP
		case corev1.ProtocolUDP:
			port.Protocol = syncpodv1.Protocol_PROTOCOL_UDP
		case corev1.ProtocolSCTP:
			port.Protocol = syncpodv1.Protocol_PROTOCOL_SCTP
		default:
			c.errorf(fmt.Sprintf("%s.ports[%d].protocol", path, i), "must be TCP, UDP or SCTP, got %q", kp.Protocol)
		}
		out.Ports = append(out.Ports, port)
	}
	out.Resources = c.resources(path+".resources", &kc.Resources)
	for i, rp := range kc.ResizePolicy {
		p := fmt.Sprintf("%s.resizePolicy[%d]", path, i)
		policy := &syncpodv1.ContainerResizePolicy{ResourceName: string(rp.ResourceName)}
		switch rp.RestartPolicy {
		case corev1.NotRequired:
			policy.RestartPolicy = syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_NOT_REQUIRED
		case corev1.RestartContainer:
			policy.RestartPolicy = syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER
		default:
			c.errorf(p+".restartPolicy", "must be NotRequired or RestartContainer, got %q", rp.RestartPolicy)
		}
		out.ResizePolicy = append(out.ResizePolicy, policy)
	}
	out.LivenessProbe = c.probe(path+".livenessProbe", kc.LivenessProbe)
	out.ReadinessProbe = c.probe(path+".readinessProbe", kc.ReadinessProbe)
	out.StartupProbe = c.probe(path+".startupProbe", kc.StartupProbe)
	c.containerExtras(path, kc, out)
	return out
}

// ComputeList is l's CPU and memory in wire form (never nil); the
// other resources of l are left out.
func ComputeList(l corev1.ResourceList) *syncpodv1.ResourceList {
	out := &syncpodv1.ResourceList{}
	if q, ok := l[corev1.ResourceCPU]; ok {
		out.Cpu = q.String()
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		out.Memory = q.String()
	}
	return out
}

func (c *converter) resources(path string, r *corev1.ResourceRequirements) *syncpodv1.ResourceRequirements {
	list := func(l corev1.ResourceList) *syncpodv1.ResourceList {
		if len(l) == 0 {
			return nil
		}
		return ComputeList(l)
	}
	req, lim := list(r.Requests), list(r.Limits)
	if req == nil && lim == nil {
		return nil
	}
	return &syncpodv1.ResourceRequirements{Requests: req, Limits: lim}
}

func (c *converter) port(path string, p intstr.IntOrString) int32 {
	if p.Type == intstr.String {
		c.errorf(path, "named ports are not supported (got %q); use the number", p.StrVal)
		return 0
	}
	return p.IntVal
}

func (c *converter) probe(path string, kp *corev1.Probe) *syncpodv1.Probe {
	if kp == nil {
		return nil
	}
	out := &syncpodv1.Probe{
		InitialDelaySeconds:           kp.InitialDelaySeconds,
		TimeoutSeconds:                kp.TimeoutSeconds,
		PeriodSeconds:                 kp.PeriodSeconds,
		SuccessThreshold:              kp.SuccessThreshold,
		FailureThreshold:              kp.FailureThreshold,
		TerminationGracePeriodSeconds: kp.TerminationGracePeriodSeconds,
	}
	switch h := kp.ProbeHandler; {
	case h.Exec != nil:
		out.Handler = &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: h.Exec.Command}}
	case h.TCPSocket != nil:
		out.Handler = &syncpodv1.Probe_TcpSocket{TcpSocket: &syncpodv1.TCPSocketAction{
			Port: c.port(path+".tcpSocket.port", h.TCPSocket.Port), Host: h.TCPSocket.Host}}
	case h.HTTPGet != nil:
		g := &syncpodv1.HTTPGetAction{Path: h.HTTPGet.Path, Port: c.port(path+".httpGet.port", h.HTTPGet.Port),
			Host: h.HTTPGet.Host, Scheme: string(h.HTTPGet.Scheme)}
		for _, hd := range h.HTTPGet.HTTPHeaders {
			g.HttpHeaders = append(g.HttpHeaders, &syncpodv1.HTTPHeader{Name: hd.Name, Value: hd.Value})
		}
		out.Handler = &syncpodv1.Probe_HttpGet{HttpGet: g}
	case h.GRPC != nil:
		// an unset service asks for the server's overall health.
		g := &syncpodv1.GRPCAction{Port: h.GRPC.Port}
		if h.GRPC.Service != nil {
			g.Service = *h.GRPC.Service
		}
		if m := h.GRPC.Mode; m != nil {
			switch *m {
			case corev1.GRPCProbeModePlaintext:
			case corev1.GRPCProbeModeTLS:
				g.Tls = true
			default:
				c.errorf(path+".grpc.mode", "must be %q or %q (got %q)", corev1.GRPCProbeModePlaintext, corev1.GRPCProbeModeTLS, string(*m))
			}
		}
		out.Handler = &syncpodv1.Probe_Grpc{Grpc: g}
	}
	return out
}

// schema describes the supported JSON shape: a leaf, an object with known
// keys, a list of some schema, or a map with free keys.
type schema struct {
	fields   map[string]*schema
	elem     *schema // list element
	freeKeys bool    // labels, annotations
}

func leaf() *schema                    { return &schema{} }
func obj(f map[string]*schema) *schema { return &schema{fields: f} }
func listOf(e *schema) *schema         { return &schema{elem: e} }
func freeMap() *schema                 { return &schema{freeKeys: true} }

func podSchema() *schema {
	probe := obj(map[string]*schema{
		"exec":                          obj(map[string]*schema{"command": listOf(leaf())}),
		"tcpSocket":                     obj(map[string]*schema{"port": leaf(), "host": leaf()}),
		"httpGet":                       obj(map[string]*schema{"path": leaf(), "port": leaf(), "host": leaf(), "scheme": leaf(), "httpHeaders": listOf(obj(map[string]*schema{"name": leaf(), "value": leaf()}))}),
		"grpc":                          obj(map[string]*schema{"port": leaf(), "service": leaf(), "mode": leaf()}),
		"initialDelaySeconds":           leaf(),
		"timeoutSeconds":                leaf(),
		"periodSeconds":                 leaf(),
		"successThreshold":              leaf(),
		"failureThreshold":              leaf(),
		"terminationGracePeriodSeconds": leaf(),
	})
	resList := obj(map[string]*schema{"cpu": leaf(), "memory": leaf()})
	container := obj(map[string]*schema{
		"name": leaf(), "image": leaf(), "command": listOf(leaf()), "args": listOf(leaf()), "workingDir": leaf(),
		"stdin": leaf(), "stdinOnce": leaf(), "tty": leaf(),
		"env":             envSchema(),
		"envFrom":         envFromSchema(),
		"volumeMounts":    volumeMountSchema(),
		"imagePullPolicy": leaf(),
		"restartPolicy":   leaf(),
		"restartPolicyRules": listOf(obj(map[string]*schema{
			"action":    leaf(),
			"exitCodes": obj(map[string]*schema{"operator": leaf(), "values": listOf(leaf())}),
		})),
		"ports":          listOf(obj(map[string]*schema{"name": leaf(), "containerPort": leaf(), "hostPort": leaf(), "protocol": leaf(), "hostIP": leaf()})),
		"resources":      obj(map[string]*schema{"requests": resList, "limits": resList}),
		"resizePolicy":   listOf(obj(map[string]*schema{"resourceName": leaf(), "restartPolicy": leaf()})),
		"livenessProbe":  probe,
		"readinessProbe": probe,
		"startupProbe":   probe,
	})
	maps.Copy(container.fields, containerExtrasSchema())
	ephemeral := obj(maps.Clone(container.fields))
	ephemeral.fields["targetContainerName"] = leaf()
	spec := obj(map[string]*schema{
		"initContainers":                listOf(container),
		"containers":                    listOf(container),
		"ephemeralContainers":           listOf(ephemeral),
		"restartPolicy":                 leaf(),
		"terminationGracePeriodSeconds": leaf(),
		"hostNetwork":                   leaf(),
		"hostname":                      leaf(),
		"volumes":                       listOf(volumeSchema()),
	})
	maps.Copy(spec.fields, specExtrasSchema())
	return obj(map[string]*schema{
		"apiVersion": leaf(),
		"kind":       leaf(),
		"metadata": obj(map[string]*schema{
			"name": leaf(), "namespace": leaf(), "uid": leaf(), "labels": freeMap(), "annotations": freeMap(),
		}),
		"spec": spec,
	})
}

// ignoredPaths are unsupported fields that only matter to a cluster: they
// are warnings, not errors. "[]" stands for any list index.
func ignoredPath(path string) (string, bool) {
	switch anyIndex().ReplaceAllString(path, "[]") {
	case "status":
		return "status is set by syncpod; ignored", true
	case "metadata.creationTimestamp", "metadata.resourceVersion", "metadata.generation", "metadata.managedFields",
		"metadata.selfLink", "metadata.ownerReferences", "metadata.finalizers", "metadata.deletionTimestamp",
		"metadata.deletionGracePeriodSeconds":
		return "set by the API server; ignored", true
	case "spec.nodeName", "spec.nodeSelector", "spec.affinity", "spec.tolerations", "spec.schedulerName",
		"spec.priorityClassName", "spec.preemptionPolicy", "spec.topologySpreadConstraints",
		"spec.schedulingGates":
		return "scheduling does not apply to a single-node syncpod; ignored", true
	case "spec.enableServiceLinks", "spec.serviceAccountName", "spec.serviceAccount",
		"spec.automountServiceAccountToken", "spec.subdomain", "spec.setHostnameAsFQDN", "spec.readinessGates":
		return "cluster integration is not supported; ignored", true
	case "spec.securityContext.windowsOptions", "spec.containers[].securityContext.windowsOptions",
		"spec.initContainers[].securityContext.windowsOptions", "spec.ephemeralContainers[].securityContext.windowsOptions":
		return "Windows options do not apply to a Linux node; ignored", true
	}
	return "", false
}

// anyIndex is compiled at its first use: most manifests never need it.
var anyIndex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[\d+\]`) })

// unsupportedMessage is why a Kubernetes field syncpod refuses cannot
// apply: "not supported by syncpod", with the reason where there is one.
func unsupportedMessage(path string) string {
	switch anyIndex().ReplaceAllString(path, "[]") {
	case "spec.volumes[].projected.sources[].serviceAccountToken":
		return "not supported by a standalone syncpod: a service account token is issued by the Kubernetes API server (TokenRequest), " +
			"which only syncpod-node, for the pods bound to its node, can ask"
	case "spec.volumes[].projected.sources[].clusterTrustBundle":
		return "not supported by syncpod: cluster trust bundles are read from the Kubernetes API server, which a standalone syncpod does not have"
	}
	return "not supported by syncpod"
}

// isEmpty reports a value that is as good as unset.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		return x.String() == "0"
	case map[string]any:
		for _, e := range x {
			if !isEmpty(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	return false
}

// walk reports every non-empty field of v that s does not describe: as
// unknown (with the closest field name) when t, the Kubernetes type at
// this point (nil when unknown), has no such field; otherwise as ignored
// (a warning) or not supported.
func walk(path string, v any, s *schema, t reflect.Type) []Issue {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	var out []Issue
	switch {
	case s.fields != nil:
		m, ok := v.(map[string]any)
		if !ok {
			return nil // type errors are reported by the typed decode
		}
		kfields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := join(k)
			sub, known := s.fields[k]
			if known {
				out = append(out, walk(p, m[k], sub, kfields[k])...)
				continue
			}
			if _, isField := kfields[k]; kfields != nil && !isField {
				out = append(out, unknownField(p, k, slices.Sorted(maps.Keys(kfields))))
				continue
			}
			if isEmpty(m[k]) {
				continue
			}
			if msg, ok := ignoredPath(p); ok {
				out = append(out, Issue{Path: p, Message: msg, Severity: Warning})
				continue
			}
			out = append(out, Issue{Path: p, Message: unsupportedMessage(p), Severity: Error})
		}
	case s.elem != nil:
		l, ok := v.([]any)
		if !ok {
			return nil
		}
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i, e := range l {
			out = append(out, walk(fmt.Sprintf("%s[%d]", path, i), e, s.elem, et)...)
		}
	}
	return out
}

// jsonFields maps the JSON names of struct type t's fields (inline ones
// flattened, pointers followed) to their types; nil when t is not a
// struct.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && (strings.Contains(opts, "inline") || f.Anonymous) {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		if name == "" {
			name = f.Name
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		out[name] = ft
	}
	return out
}
