package plannertest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Planner is a fake PlannerService. Objects are kept by "namespace/name"
// (an empty namespace is "default"); it answers:
//
//   - ApplyPod: InvalidArgument when the function SetValidate set refuses
//     the pod; else stores it: CREATED, UPDATED when the spec changed,
//     else UNCHANGED (watchers see ADDED or MODIFIED);
//   - GetPod: the record of the pod named by uid or by namespace and name,
//     NotFound when there is none;
//   - ListPods: the records of a namespace (every one for ""), by key;
//   - WatchPods: an ADDED per pod of the namespace, then every change;
//   - DeletePod: marks the pod deleted (its DeletionTime now), then
//     forgets it (DELETED), or with KeepDeleted keeps it terminating
//     (MODIFIED) until RemovePod; NotFound when there is none;
//   - ContainerLogs: the lines SetLogs set for the container ("NAME" for
//     its current instance, "NAME/previous" for the one before); NotFound
//     for an unknown pod, or a container the pod does not have;
//   - ListConfigMaps, ListSecrets: every one of a namespace (Secrets
//     without their data); DeleteConfigMap, DeleteSecret: forget one,
//     NotFound when there is none;
//   - ShutdownNode: marks the node's shutdown DONE (the one SetShutdown
//     set, or an empty one) and answers it, or with cancel counts the
//     cancellation; GetNodeShutdown: that shutdown (an empty one when
//     none);
//   - GetNodeConditions: the conditions SetNodeConditions set (three
//     false ones when none), or the error SetNodeConditionsError set;
//   - ListPodStats: the stats SetPodStats set of the namespace (every
//     one for ""), in the order set, or the error SetPodStatsError set;
//   - anything else: Unimplemented.
//
// Applied, Deleted, PodDeletes, GetPodCalls and LogRequests return what
// it was asked. The zero Planner is ready (its clock the wall clock); it
// is safe for concurrent use.
type Planner struct {
	plannerv1.UnimplementedPlannerServiceServer

	mu          sync.Mutex
	now         func() time.Time
	validate    func(*syncpodv1.Pod) error
	keepDeleted bool
	pods        map[string]*plannerv1.PodRecord
	configMaps  map[string]*syncpodv1.ConfigMap
	secrets     map[string]*syncpodv1.Secret
	logs        map[string][]*syncpodv1.LogLine
	watchers    []chan *plannerv1.WatchPodsResponse
	nextWatch   chan struct{}
	watchGate   <-chan struct{}
	watchCalled chan struct{}
	applied     []*plannerv1.ApplyPodRequest
	deleted     []string
	podDeletes  []PodDelete
	getPods     int
	logReqs     []*plannerv1.ContainerLogsRequest
	shutdown    *plannerv1.NodeShutdown
	cancels     int
	conditions  *plannerv1.GetNodeConditionsResponse
	condErr     error
	stats       []*syncpodv1.PodStats
	statsErr    error
}

// SetPodStats sets the stats ListPodStats answers, and clears any error
// SetPodStatsError set.
func (p *Planner) SetPodStats(stats ...*syncpodv1.PodStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats, p.statsErr = nil, nil
	for _, st := range stats {
		p.stats = append(p.stats, proto.Clone(st).(*syncpodv1.PodStats))
	}
}

// SetPodStatsError makes ListPodStats fail with err (nil: answer again).
func (p *Planner) SetPodStatsError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.statsErr = err
}

// ListPodStats answers the stats SetPodStats set.
func (p *Planner) ListPodStats(_ context.Context, req *plannerv1.ListPodStatsRequest) (*plannerv1.ListPodStatsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.statsErr != nil {
		return nil, p.statsErr
	}
	out := &plannerv1.ListPodStatsResponse{}
	for _, st := range p.stats {
		if inNamespace(req.GetNamespace(), st.GetPodNamespace()) {
			out.Stats = append(out.Stats, proto.Clone(st).(*syncpodv1.PodStats))
		}
	}
	return out, nil
}

// SetNodeConditions sets the pressure conditions GetNodeConditions
// answers, and clears any error SetNodeConditionsError set.
func (p *Planner) SetNodeConditions(resp *plannerv1.GetNodeConditionsResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conditions, p.condErr = proto.Clone(resp).(*plannerv1.GetNodeConditionsResponse), nil
}

// SetNodeConditionsError makes GetNodeConditions fail with err (nil:
// answer again).
func (p *Planner) SetNodeConditionsError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.condErr = err
}

// GetNodeConditions answers the conditions SetNodeConditions set.
func (p *Planner) GetNodeConditions(context.Context, *plannerv1.GetNodeConditionsRequest) (*plannerv1.GetNodeConditionsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.condErr != nil {
		return nil, p.condErr
	}
	if p.conditions == nil {
		return &plannerv1.GetNodeConditionsResponse{Conditions: []*plannerv1.NodeCondition{
			{Type: "MemoryPressure", Reason: "KubeletHasSufficientMemory", Message: "syncpod has sufficient memory available"},
			{Type: "DiskPressure", Reason: "KubeletHasNoDiskPressure", Message: "syncpod has no disk pressure"},
			{Type: "PIDPressure", Reason: "KubeletHasSufficientPID", Message: "syncpod has sufficient PID available"},
		}}, nil
	}
	return proto.Clone(p.conditions).(*plannerv1.GetNodeConditionsResponse), nil
}

// SetShutdown sets the node shutdown GetNodeShutdown answers.
func (p *Planner) SetShutdown(st *plannerv1.NodeShutdown) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shutdown = proto.Clone(st).(*plannerv1.NodeShutdown)
}

// ShutdownCancels is how many ShutdownNode calls cancelled.
func (p *Planner) ShutdownCancels() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancels
}

// ShutdownNode implements the fake's shutdown: see Planner.
func (p *Planner) ShutdownNode(_ context.Context, req *plannerv1.ShutdownNodeRequest) (*plannerv1.ShutdownNodeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdown == nil {
		p.shutdown = &plannerv1.NodeShutdown{Trigger: "api"}
	}
	if req.GetCancel() {
		p.cancels++
	} else {
		p.shutdown.Phase = plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE
	}
	return &plannerv1.ShutdownNodeResponse{Shutdown: proto.Clone(p.shutdown).(*plannerv1.NodeShutdown)}, nil
}

// GetNodeShutdown answers the shutdown SetShutdown or ShutdownNode set.
func (p *Planner) GetNodeShutdown(context.Context, *plannerv1.GetNodeShutdownRequest) (*plannerv1.GetNodeShutdownResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := &plannerv1.NodeShutdown{}
	if p.shutdown != nil {
		st = proto.Clone(p.shutdown).(*plannerv1.NodeShutdown)
	}
	return &plannerv1.GetNodeShutdownResponse{Shutdown: st}, nil
}

// PodDelete is one DeletePod call: the request, and how long the caller's
// deadline left it (-1: no deadline).
type PodDelete struct {
	Request *plannerv1.DeletePodRequest
	Budget  time.Duration
}

// SetClock sets the clock that stamps deletions.
func (p *Planner) SetClock(now func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now = now
}

// SetValidate sets the check ApplyPod makes (nil: none).
func (p *Planner) SetValidate(validate func(*syncpodv1.Pod) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.validate = validate
}

// KeepDeleted makes DeletePod keep a pod, terminating, until RemovePod.
func (p *Planner) KeepDeleted(keep bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keepDeleted = keep
}

// Pod returns a copy of the stored record of key.
func (p *Planner) Pod(key string) (*plannerv1.PodRecord, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.pods[key]
	if !ok {
		return nil, false
	}
	return proto.Clone(r).(*plannerv1.PodRecord), true
}

// UpdatePod changes the stored record of key and tells the watchers.
func (p *Planner) UpdatePod(key string, change func(*plannerv1.PodRecord)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.pods[key]
	change(r)
	p.publish(plannerv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, r)
}

// RemovePod forgets the pod of key, as the planner does once its
// containers are gone, and tells the watchers.
func (p *Planner) RemovePod(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.pods[key]
	delete(p.pods, key)
	p.publish(plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED, r)
}

// NextWatch returns a channel closed once the next WatchPods call has
// subscribed.
func (p *Planner) NextWatch() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextWatch = make(chan struct{})
	return p.nextWatch
}

// HoldWatches makes every WatchPods call wait for gate to close before it
// subscribes (a planner slow to take the call); called is closed when the
// first call arrives.
func (p *Planner) HoldWatches(gate <-chan struct{}) (called <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watchGate, p.watchCalled = gate, make(chan struct{})
	return p.watchCalled
}

// publish sends a change to every watcher; p.mu is held.
func (p *Planner) publish(t plannerv1.WatchEventType, r *plannerv1.PodRecord) {
	for _, w := range p.watchers {
		w <- &plannerv1.WatchPodsResponse{Type: t, Record: proto.Clone(r).(*plannerv1.PodRecord)}
	}
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

// PodDeletes returns the DeletePod calls, in order.
func (p *Planner) PodDeletes() []PodDelete {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.podDeletes)
}

// GetPodCalls returns how many GetPod calls came.
func (p *Planner) GetPodCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.getPods
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
	if p.validate != nil {
		if err := p.validate(pod); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	k := Key(pod.GetNamespace(), pod.GetName())
	if old, ok := p.pods[k]; ok {
		if proto.Equal(old.GetPod().GetSpec(), pod.GetSpec()) {
			return &plannerv1.ApplyPodResponse{Pod: old.GetPod(), Result: plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED}, nil
		}
		old.Pod = pod
		p.publish(plannerv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, old)
		return &plannerv1.ApplyPodResponse{Pod: pod, Result: plannerv1.ApplyResult_APPLY_RESULT_UPDATED}, nil
	}
	if p.pods == nil {
		p.pods = map[string]*plannerv1.PodRecord{}
	}
	p.pods[k] = &plannerv1.PodRecord{Pod: pod}
	p.publish(plannerv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, p.pods[k])
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
	p.getPods++
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

// DeletePod deletes the pod (see Planner).
func (p *Planner) DeletePod(ctx context.Context, req *plannerv1.DeletePodRequest) (*plannerv1.DeletePodResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	budget := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	p.podDeletes = append(p.podDeletes, PodDelete{Request: req, Budget: budget})
	k := Key(req.GetPod().GetNamespace(), req.GetPod().GetName())
	r, ok := p.pods[k]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "pod %q not found", req.GetPod().GetName())
	}
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	r.Pod.DeletionTime = timestamppb.New(now())
	if p.keepDeleted {
		p.publish(plannerv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, r)
	} else {
		delete(p.pods, k)
		p.deleted = append(p.deleted, "pod/"+k)
		p.publish(plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED, r)
	}
	return &plannerv1.DeletePodResponse{Pod: r.GetPod()}, nil
}

// WatchPods sends the namespace's pods, then their changes (see Planner),
// until the caller leaves.
func (p *Planner) WatchPods(req *plannerv1.WatchPodsRequest, stream plannerv1.PlannerService_WatchPodsServer) error {
	p.mu.Lock()
	gate, called := p.watchGate, p.watchCalled
	if called != nil {
		select {
		case <-called:
		default:
			close(called)
		}
	}
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-stream.Context().Done():
			return nil
		}
	}
	ch := make(chan *plannerv1.WatchPodsResponse, 100)
	p.mu.Lock()
	var initial []*plannerv1.WatchPodsResponse
	for _, k := range slices.Sorted(maps.Keys(p.pods)) {
		if r := p.pods[k]; inNamespace(req.GetNamespace(), r.GetPod().GetNamespace()) {
			initial = append(initial, &plannerv1.WatchPodsResponse{Type: plannerv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, Record: proto.Clone(r).(*plannerv1.PodRecord)})
		}
	}
	p.watchers = append(p.watchers, ch)
	if p.nextWatch != nil {
		close(p.nextWatch)
		p.nextWatch = nil
	}
	p.mu.Unlock()
	// As the planner does: the header once subscribed.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for _, ev := range initial {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case ev := <-ch:
			if !inNamespace(req.GetNamespace(), ev.GetRecord().GetPod().GetNamespace()) {
				continue
			}
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

// ContainerLogs sends the lines set for the container (see Planner).
func (p *Planner) ContainerLogs(req *plannerv1.ContainerLogsRequest, stream plannerv1.PlannerService_ContainerLogsServer) error {
	p.mu.Lock()
	p.logReqs = append(p.logReqs, req)
	r, err := p.record(req.GetPod())
	k := req.GetContainer()
	if req.GetPrevious() {
		k += "/previous"
	}
	lines := p.logs[k]
	p.mu.Unlock()
	if err != nil {
		return err
	}
	var names []string
	for _, c := range slices.Concat(r.GetPod().GetSpec().GetInitContainers(), r.GetPod().GetSpec().GetContainers(), r.GetPod().GetSpec().GetEphemeralContainers()) {
		names = append(names, c.GetName())
	}
	if !slices.Contains(names, req.GetContainer()) {
		return status.Errorf(codes.NotFound, "container %s is not valid for pod %s: choose one of [%s]", req.GetContainer(), r.GetPod().GetName(), strings.Join(names, " "))
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
