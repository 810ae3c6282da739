package plannertest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Planner is a fake PlannerService. Objects are kept by "namespace/name"
// (an empty namespace is "default"); it answers:
//
//   - ApplyPod: stores the pod; CREATED, UPDATED when the spec changed,
//     else UNCHANGED;
//   - GetPod: the record of the pod named by uid or by namespace and name,
//     NotFound when there is none;
//   - ListPods: the records of a namespace (every one for ""), by key;
//   - DeletePod: forgets the pod; NotFound when there is none;
//   - ContainerLogs: the lines SetLogs set for the container ("NAME" for
//     its current instance, "NAME/previous" for the one before), NotFound
//     for an unknown pod;
//   - ListConfigMaps, ListSecrets: every one of a namespace (Secrets
//     without their data); DeleteConfigMap, DeleteSecret: forget one,
//     NotFound when there is none;
//   - anything else: Unimplemented.
//
// Applied, Deleted and LogRequests return what it was asked. The zero
// Planner is ready; it is safe for concurrent use.
type Planner struct {
	plannerv1.UnimplementedPlannerServiceServer

	mu         sync.Mutex
	pods       map[string]*plannerv1.PodRecord
	configMaps map[string]*syncpodv1.ConfigMap
	secrets    map[string]*syncpodv1.Secret
	logs       map[string][]*syncpodv1.LogLine
	applied    []*plannerv1.ApplyPodRequest
	deleted    []string
	logReqs    []*plannerv1.ContainerLogsRequest
}

// Key is how the fake names an object: "namespace/name", the namespace
// "default" when empty.
func Key(namespace, name string) string {
	if namespace == "" {
		namespace = "default"
	}
	return namespace + "/" + name
}

// PutPod stores a pod's record as it is, without recording an apply.
func (p *Planner) PutPod(rec *plannerv1.PodRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods == nil {
		p.pods = map[string]*plannerv1.PodRecord{}
	}
	p.pods[Key(rec.GetPod().GetNamespace(), rec.GetPod().GetName())] = rec
}

// PutConfigMap stores ConfigMaps.
func (p *Planner) PutConfigMap(cms ...*syncpodv1.ConfigMap) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.configMaps == nil {
		p.configMaps = map[string]*syncpodv1.ConfigMap{}
	}
	for _, c := range cms {
		p.configMaps[Key(c.GetNamespace(), c.GetName())] = c
	}
}

// PutSecret stores Secrets.
func (p *Planner) PutSecret(secrets ...*syncpodv1.Secret) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.secrets == nil {
		p.secrets = map[string]*syncpodv1.Secret{}
	}
	for _, s := range secrets {
		p.secrets[Key(s.GetNamespace(), s.GetName())] = s
	}
}

// SetLogs sets the lines ContainerLogs answers for container, in any pod
// ("NAME/previous" for a previous instance).
func (p *Planner) SetLogs(container string, lines ...*syncpodv1.LogLine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logs == nil {
		p.logs = map[string][]*syncpodv1.LogLine{}
	}
	p.logs[container] = lines
}

// ConfigMapKeys lists the keys of the ConfigMaps stored, sorted.
func (p *Planner) ConfigMapKeys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.configMaps))
}

// SecretKeys lists the keys of the Secrets stored, sorted.
func (p *Planner) SecretKeys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.secrets))
}

// Applied returns the ApplyPod requests, in order.
func (p *Planner) Applied() []*plannerv1.ApplyPodRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.applied)
}

// Deleted returns what DeletePod, DeleteConfigMap and DeleteSecret
// removed, in order, as "pod/KEY", "configmap/KEY" and "secret/KEY".
func (p *Planner) Deleted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deleted)
}

// LogRequests returns the ContainerLogs requests, in order.
func (p *Planner) LogRequests() []*plannerv1.ContainerLogsRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.logReqs)
}

// ApplyPod stores the pod (see Planner).
func (p *Planner) ApplyPod(_ context.Context, req *plannerv1.ApplyPodRequest) (*plannerv1.ApplyPodResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applied = append(p.applied, req)
	pod := req.GetPod()
	k := Key(pod.GetNamespace(), pod.GetName())
	if old, ok := p.pods[k]; ok {
		if proto.Equal(old.GetPod().GetSpec(), pod.GetSpec()) {
			return &plannerv1.ApplyPodResponse{Pod: old.GetPod(), Result: plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED}, nil
		}
		old.Pod = pod
		return &plannerv1.ApplyPodResponse{Pod: pod, Result: plannerv1.ApplyResult_APPLY_RESULT_UPDATED}, nil
	}
	if p.pods == nil {
		p.pods = map[string]*plannerv1.PodRecord{}
	}
	p.pods[k] = &plannerv1.PodRecord{Pod: pod}
	return &plannerv1.ApplyPodResponse{Pod: pod, Result: plannerv1.ApplyResult_APPLY_RESULT_CREATED}, nil
}

// record finds the record ref names; p.mu is held.
func (p *Planner) record(ref *plannerv1.PodRef) (*plannerv1.PodRecord, error) {
	if ref.GetUid() != "" {
		for _, r := range p.pods {
			if r.GetPod().GetUid() == ref.GetUid() {
				return r, nil
			}
		}
	}
	if r, ok := p.pods[Key(ref.GetNamespace(), ref.GetName())]; ok {
		return r, nil
	}
	return nil, status.Errorf(codes.NotFound, "pod %q not found", ref.GetName())
}

// GetPod answers the record of the pod named (see Planner).
func (p *Planner) GetPod(_ context.Context, req *plannerv1.GetPodRequest) (*plannerv1.GetPodResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, err := p.record(req.GetPod())
	if err != nil {
		return nil, err
	}
	return &plannerv1.GetPodResponse{Record: proto.Clone(r).(*plannerv1.PodRecord)}, nil
}

// ListPods answers the records of the namespace (see Planner).
func (p *Planner) ListPods(_ context.Context, req *plannerv1.ListPodsRequest) (*plannerv1.ListPodsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &plannerv1.ListPodsResponse{}
	for _, k := range slices.Sorted(maps.Keys(p.pods)) {
		if r := p.pods[k]; inNamespace(req.GetNamespace(), r.GetPod().GetNamespace()) {
			out.Records = append(out.Records, proto.Clone(r).(*plannerv1.PodRecord))
		}
	}
	return out, nil
}

// DeletePod forgets the pod (see Planner).
func (p *Planner) DeletePod(_ context.Context, req *plannerv1.DeletePodRequest) (*plannerv1.DeletePodResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, err := p.record(req.GetPod())
	if err != nil {
		return nil, err
	}
	k := Key(r.GetPod().GetNamespace(), r.GetPod().GetName())
	delete(p.pods, k)
	p.deleted = append(p.deleted, "pod/"+k)
	return &plannerv1.DeletePodResponse{Pod: r.GetPod()}, nil
}

// ContainerLogs sends the lines set for the container (see Planner).
func (p *Planner) ContainerLogs(req *plannerv1.ContainerLogsRequest, stream plannerv1.PlannerService_ContainerLogsServer) error {
	p.mu.Lock()
	p.logReqs = append(p.logReqs, req)
	_, err := p.record(req.GetPod())
	k := req.GetContainer()
	if req.GetPrevious() {
		k += "/previous"
	}
	lines := p.logs[k]
	p.mu.Unlock()
	if err != nil {
		return err
	}
	return stream.Send(&plannerv1.ContainerLogsResponse{Lines: lines})
}

// ListConfigMaps answers the namespace's ConfigMaps.
func (p *Planner) ListConfigMaps(_ context.Context, req *plannerv1.ListConfigMapsRequest) (*plannerv1.ListConfigMapsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &plannerv1.ListConfigMapsResponse{}
	for _, k := range slices.Sorted(maps.Keys(p.configMaps)) {
		if c := p.configMaps[k]; inNamespace(req.GetNamespace(), c.GetNamespace()) {
			out.ConfigMaps = append(out.ConfigMaps, c)
		}
	}
	return out, nil
}

// ListSecrets answers the namespace's Secrets, without their data.
func (p *Planner) ListSecrets(_ context.Context, req *plannerv1.ListSecretsRequest) (*plannerv1.ListSecretsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &plannerv1.ListSecretsResponse{}
	for _, k := range slices.Sorted(maps.Keys(p.secrets)) {
		if s := p.secrets[k]; inNamespace(req.GetNamespace(), s.GetNamespace()) {
			out.Secrets = append(out.Secrets, &syncpodv1.Secret{Name: s.GetName(), Namespace: s.GetNamespace(), Annotations: s.GetAnnotations()})
		}
	}
	return out, nil
}

// DeleteConfigMap forgets a ConfigMap.
func (p *Planner) DeleteConfigMap(_ context.Context, req *plannerv1.DeleteConfigMapRequest) (*plannerv1.DeleteConfigMapResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := Key(req.GetRef().GetNamespace(), req.GetRef().GetName())
	if _, ok := p.configMaps[k]; !ok {
		return nil, status.Error(codes.NotFound, k)
	}
	delete(p.configMaps, k)
	p.deleted = append(p.deleted, "configmap/"+k)
	return &plannerv1.DeleteConfigMapResponse{}, nil
}

// DeleteSecret forgets a Secret.
func (p *Planner) DeleteSecret(_ context.Context, req *plannerv1.DeleteSecretRequest) (*plannerv1.DeleteSecretResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := Key(req.GetRef().GetNamespace(), req.GetRef().GetName())
	if _, ok := p.secrets[k]; !ok {
		return nil, status.Error(codes.NotFound, k)
	}
	delete(p.secrets, k)
	p.deleted = append(p.deleted, "secret/"+k)
	return &plannerv1.DeleteSecretResponse{}, nil
}

// inNamespace says whether an object of namespace ns is listed for the
// namespace asked for (every one when empty).
func inNamespace(asked, ns string) bool {
	if ns == "" {
		ns = "default"
	}
	return asked == "" || asked == ns
}
