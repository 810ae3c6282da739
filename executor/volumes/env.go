package volumes

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/expansion"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// PodInfo is what the downward API reads that is not in the pod spec.
type PodInfo struct {
	// NodeName is spec.nodeName.
	NodeName string
	// PodIP is status.podIP (the sandbox's IP).
	PodIP string
	// HostIP is status.hostIP.
	HostIP string
	// Volumes are the directories of the pod's volumes that are set up
	// (Manager.Setup): env[].valueFrom.fileKeyRef reads its env file in
	// one.
	Volumes Paths
}

// Env resolves c's environment as the kubelet does at container start:
// envFrom sources first, each key with the source's prefix (R-17.3: any
// name the API server allows, printable ASCII but '='; a ConfigMap or
// Secret key never has '=', so with a valid prefix no key is skipped, as
// the kubelet of v1.37 skips none), then env in order, a later name replacing an earlier one in
// place; $(VAR) references in plain env values are expanded against the
// variables defined before them (package expansion). A missing non-optional ConfigMap, Secret or key is an error (the
// kubelet's CreateContainerConfigError message). The pod's Service
// environment comes last, each variable only when the container did not
// set that name itself, and $(VAR) in env values falls back to it.
// A fileKeyRef variable is read from its env file in info.Volumes at this
// moment.
func Env(pod *syncpodv1.Pod, c *syncpodv1.Container, src Sources, info PodInfo) ([]*runtimeapi.KeyValue, error) {
	ns := pod.GetNamespace()
	var out []*runtimeapi.KeyValue
	index := map[string]int{}
	set := func(k string, v []byte) {
		if i, ok := index[k]; ok {
			out[i].Value = v
			return
		}
		index[k] = len(out)
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: v})
	}
	services := pod.GetServiceEnvironment()
	defined := func(name string) (string, bool) {
		if i, ok := index[name]; ok {
			return string(out[i].Value), true
		}
		v, ok := services[name]
		return v, ok
	}
	for _, ef := range c.GetEnvFrom() {
		var data map[string][]byte
		var err error
		optional := false
		switch {
		case ef.GetConfigMapRef() != nil:
			optional = ef.GetConfigMapRef().GetOptional()
			data, err = src.configMapData(ns, ef.GetConfigMapRef().GetName())
		case ef.GetSecretRef() != nil:
			optional = ef.GetSecretRef().GetOptional()
			data, err = src.secretData(ns, ef.GetSecretRef().GetName())
		default:
			continue
		}
		if err != nil {
			if optional {
				continue
			}
			return nil, err
		}
		for _, k := range sortedKeys(data) {
			name := ef.GetPrefix() + k
			if validation.EnvNameProblem(name) != "" {
				continue // it would not be one NAME=value string
			}
			set(name, data[k])
		}
	}
	for _, e := range c.GetEnv() {
		vf := e.GetValueFrom()
		if vf == nil {
			// $(VAR) sees envFrom and the entries before this one,
			// then the Service variables.
			set(e.GetName(), []byte(expansion.Expand(e.GetValue(), defined)))
			continue
		}
		var val string
		var err error
		switch {
		case vf.GetFieldRef() != nil:
			val, err = envFieldValue(pod, vf.GetFieldRef().GetFieldPath(), info)
		case vf.GetResourceFieldRef() != nil:
			rf := vf.GetResourceFieldRef()
			target := c
			if rf.GetContainerName() != "" {
				target = findContainer(pod, rf.GetContainerName())
			}
			val, err = resourceValue(pod, target, rf)
		case vf.GetConfigMapKeyRef() != nil:
			ref := vf.GetConfigMapKeyRef()
			b, found, kerr := keyRef(src.configMapData, "ConfigMap", ns, ref.GetName(), ref.GetKey(), ref.GetOptional())
			if kerr != nil {
				return nil, kerr
			}
			if !found {
				continue
			}
			val = string(b)
		case vf.GetSecretKeyRef() != nil:
			ref := vf.GetSecretKeyRef()
			b, found, kerr := keyRef(src.secretData, "Secret", ns, ref.GetName(), ref.GetKey(), ref.GetOptional())
			if kerr != nil {
				return nil, kerr
			}
			if !found {
				continue
			}
			val = string(b)
		case vf.GetFileKeyRef() != nil:
			v, found, ferr := fileKeyValue(info.Volumes, vf.GetFileKeyRef())
			if ferr != nil {
				return nil, ferr
			}
			if !found {
				continue
			}
			val = v
		}
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.GetName(), err)
		}
		set(e.GetName(), []byte(val))
	}
	for _, k := range sortedKeys(services) {
		if _, own := index[k]; !own {
			set(k, []byte(services[k]))
		}
	}
	return out, nil
}

func nsOr(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

var subscriptRE = regexp.MustCompile(`^metadata\.(labels|annotations)\['([^']*)'\]$`)

// metadataValue resolves the metadata fields both env and volumes accept.
func metadataValue(pod *syncpodv1.Pod, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return pod.GetName(), true
	case "metadata.namespace":
		return nsOr(pod.GetNamespace()), true
	case "metadata.uid":
		return pod.GetUid(), true
	}
	if m := subscriptRE.FindStringSubmatch(path); m != nil {
		if m[1] == "labels" {
			return pod.GetLabels()[m[2]], true
		}
		return pod.GetAnnotations()[m[2]], true
	}
	return "", false
}

// envFieldValue resolves an env fieldRef.
func envFieldValue(pod *syncpodv1.Pod, path string, info PodInfo) (string, error) {
	if v, ok := metadataValue(pod, path); ok {
		return v, nil
	}
	switch path {
	case "spec.nodeName":
		return info.NodeName, nil
	case "status.podIP", "status.podIPs":
		return info.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return info.HostIP, nil
	case "spec.serviceAccountName":
		return "", nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

// volumeFieldValue resolves a downwardAPI volume fieldRef: metadata only,
// and the whole label or annotation map as sorted key="value" lines.
func volumeFieldValue(pod *syncpodv1.Pod, path string) (string, error) {
	if v, ok := metadataValue(pod, path); ok {
		return v, nil
	}
	switch path {
	case "metadata.labels":
		return formatMap(pod.GetLabels()), nil
	case "metadata.annotations":
		return formatMap(pod.GetAnnotations()), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

func formatMap(m map[string]string) string {
	keys := sortedKeys(m)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

func findContainer(pod *syncpodv1.Pod, name string) *syncpodv1.Container {
	for _, c := range slices.Concat(pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers(), pod.GetSpec().GetEphemeralContainers()) {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// resourceValue is the kubelet's resourceFieldRef value: the quantity
// divided by the divisor, rounded up; an unset limit is the node's
// capacity, an unset request is the limit (API defaulting), else 0.
func resourceValue(_ *syncpodv1.Pod, c *syncpodv1.Container, rf *syncpodv1.ResourceFieldSelector) (string, error) {
	if c == nil {
		return "", fmt.Errorf("container %q not found", rf.GetContainerName())
	}
	divisor := resource.MustParse("1")
	if d := rf.GetDivisor(); d != "" {
		q, err := resource.ParseQuantity(d)
		if err != nil {
			return "", fmt.Errorf("divisor %q: %w", d, err)
		}
		divisor = q
	}
	if divisor.IsZero() {
		return "", fmt.Errorf("divisor must not be 0")
	}
	r := c.GetResources()
	parse := func(s string) (*resource.Quantity, error) {
		if s == "" {
			return nil, nil
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return nil, err
		}
		return &q, nil
	}
	var raw string
	var fallback func() resource.Quantity
	cpu := false
	switch rf.GetResource() {
	case "limits.cpu":
		raw, cpu = r.GetLimits().GetCpu(), true
		fallback = nodeCPU
	case "requests.cpu":
		raw, cpu = r.GetRequests().GetCpu(), true
		if raw == "" {
			raw = r.GetLimits().GetCpu()
		}
	case "limits.memory":
		raw, fallback = r.GetLimits().GetMemory(), nodeMemory
	case "requests.memory":
		raw = r.GetRequests().GetMemory()
		if raw == "" {
			raw = r.GetLimits().GetMemory()
		}
	default:
		return "", fmt.Errorf("unsupported container resource: %s", rf.GetResource())
	}
	q, err := parse(raw)
	if err != nil {
		return "", err
	}
	if q == nil {
		if fallback != nil {
			f := fallback()
			q = &f
		} else {
			z := resource.MustParse("0")
			q = &z
		}
	}
	if cpu {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

func nodeCPU() resource.Quantity {
	return *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI)
}

func nodeMemory() resource.Quantity {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					return *resource.NewQuantity(kb*1024, resource.BinarySI)
				}
			}
		}
	}
	return resource.MustParse("0")
}

// keyRef reads one key of a ConfigMap or Secret for an env var's
// valueFrom: found is false when an optional source or key is missing
// (the variable is left out), and a missing required one is the kubelet's
// error.
func keyRef(read func(ns, name string) (map[string][]byte, error), kind, ns, name, key string, optional bool) (val []byte, found bool, err error) {
	data, err := read(ns, name)
	if err != nil {
		if optional {
			return nil, false, nil
		}
		return nil, false, err
	}
	b, ok := data[key]
	if !ok {
		if optional {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, nsOr(ns), name)
	}
	return b, true, nil
}
