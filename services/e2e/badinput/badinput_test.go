package badinput

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorservice "github.com/syncpod/syncpod/executor/service"
	"github.com/syncpod/syncpod/internal/testsummary"
	plannerservice "github.com/syncpod/syncpod/planner/service"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/validate"
	"github.com/syncpod/syncpod/pleg"
	plegservice "github.com/syncpod/syncpod/pleg/service"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
	"github.com/syncpod/syncpod/services/server"
)

// node is the three services, each behind its own server on loopback.
type node struct {
	conns   map[string]*grpc.ClientConn // by service full name
	pods    *store.Store
	runtime *critest.Runtime
	images  *critest.Images
	backoff *backoff.Store
}

func serve(t *testing.T, register func(*grpc.Server), managesHealth bool) *grpc.ClientConn {
	t.Helper()
	// A unix socket, the services' default listener (a short path: they
	// are limited to about 100 bytes).
	dir, err := os.MkdirTemp("", "bi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s, err := server.New(server.Options{Listen: "unix://" + filepath.Join(dir, "s.sock"), Logger: slog.New(slog.DiscardHandler),
		Registry: prometheus.NewRegistry(), ServiceManagesHealth: managesHealth})
	if err != nil {
		t.Fatal(err)
	}
	register(s.GRPC())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	conn, err := grpc.NewClient("unix://"+s.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); cancel(); <-errc })
	return conn
}

func startNode(t *testing.T) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{conns: map[string]*grpc.ClientConn{}}
	var err error
	n.pods, err = store.Open(store.Options{Path: filepath.Join(dir, "planner.db"), Validate: validate.Pod})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.pods.Close() })
	n.conns[plannerv1.PlannerService_ServiceDesc.ServiceName] = serve(t, func(g *grpc.Server) {
		plannerv1.RegisterPlannerServiceServer(g, plannerservice.New(plannerservice.Options{Pods: n.pods, Config: n.pods}))
		syncpodv1.RegisterVersionServiceServer(g, server.NewVersionService(server.VersionOptions{Component: "planner"}))
	}, false)
	n.conns[syncpodv1.VersionService_ServiceDesc.ServiceName] = n.conns[plannerv1.PlannerService_ServiceDesc.ServiceName]

	n.backoff, err = backoff.Open(filepath.Join(dir, "executor.db"), backoff.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.backoff.Close() })
	n.runtime = critest.NewRuntime()
	n.images = critest.NewImages("busybox:1.36")
	r, err := runner.New(runner.Config{
		Runtime: runtimeclient.NewRuntime(n.runtime, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(n.images, nil, runtimeclient.Timeouts{}),
		Backoff: n.backoff, LogDir: filepath.Join(dir, "logs"),
	})
	if err != nil {
		t.Fatal(err)
	}
	n.conns[executorv1.ExecutorService_ServiceDesc.ServiceName] = serve(t, func(g *grpc.Server) {
		executorv1.RegisterExecutorServiceServer(g, executorservice.New(r, n.backoff, nil, nil))
	}, false)

	p, err := pleg.New(pleg.Options{Runtime: critest.NewRuntime(), Logger: slog.New(slog.DiscardHandler),
		Registry: prometheus.NewRegistry(), RelistPeriod: 50 * time.Millisecond, Evented: pleg.EventedOff})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	n.conns[plegv1.PlegService_ServiceDesc.ServiceName] = serve(t, func(g *grpc.Server) {
		plegv1.RegisterPlegServiceServer(g, plegservice.New(p))
	}, true)
	return n
}

// rawCodec puts the given bytes on the wire and reads the reply's bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "proto" }

// call sends req's bytes to a unary or server-streaming method and returns
// the error of the call (of the first receive, for a stream).
func call(ctx context.Context, conn *grpc.ClientConn, md protoreflect.MethodDescriptor, req []byte) error {
	method := "/" + string(md.Parent().FullName()) + "/" + string(md.Name())
	var out []byte
	if !md.IsStreamingServer() && !md.IsStreamingClient() {
		return conn.Invoke(ctx, method, &req, &out, grpc.ForceCodecV2(rawCodec{}))
	}
	// A stream (exec, attach, port-forward: both ways) gets the one
	// message, then the end of the caller's side.
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: md.IsStreamingServer(), ClientStreams: md.IsStreamingClient()}, method, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	if err := st.SendMsg(&req); err != nil {
		return err
	}
	_ = st.CloseSend()
	return st.RecvMsg(&out)
}

// jsonCase is a malformed request written as grpcurl would send it.
type jsonCase struct {
	// method is the method's name, with its service's ("ExecutorService/Exec")
	// where both the planner and the executor have one of that name.
	method, name, json string
	field              string // the path the error must name
}

const (
	uid  = "0b6a7c8e-1f2d-4e3a-9b4c-5d6e7f8a9b0c"
	spec = `"spec":{"containers":[{"name":"app","image":"busybox:1.36","command":["sleep","3600"]}]}`
	good = `{"name":"web",` + spec + `}`
)

// pod is good with one JSON member added at the top level.
func pod(extra string) string { return `{` + extra + `,` + good[1:] }

// named is good with another name.
func named(name string) string { return `{"name":"` + name + `",` + spec + `}` }

func jsonCases() []jsonCase {
	big := strings.Repeat("x", 1<<20)
	// bigStdin is one byte over a stream message's limit, base64 as JSON
	// carries bytes.
	bigStdin := base64.StdEncoding.EncodeToString(make([]byte, validation.MaxStreamChunk+1))
	many := `[` + strings.TrimSuffix(strings.Repeat(`{"name":"c","image":"i"},`, 10000), ",") + `]`
	return []jsonCase{
		// Planner.
		{"Plan", "no pod", `{}`, "pod"},
		{"Plan", "bad name", `{"pod":` + named("Bad Name!") + `}`, "pod.name"},
		{"Plan", "restartCount -5", `{"pod":` + good + `,"observed":{"containers":[{"id":"c1","name":"app","state":"CONTAINER_STATE_EXITED","restartCount":-5}]}}`, "observed.containers[0].restart_count"},
		{"Plan", "probe for no container", `{"pod":` + good + `,"probes":[{"name":"ghost"}]}`, "probes[0].name"},
		{"Plan", "deletion grace < 0", `{"pod":` + pod(`"deletionGracePeriodSeconds":"-1"`) + `}`, "pod.deletion_grace_period_seconds"},
		{"ApplyPod", "deletionGracePeriodSeconds -1", `{"pod":` + pod(`"deletionGracePeriodSeconds":"-1"`) + `}`, "pod.deletion_grace_period_seconds"},
		{"ApplyPod", "1 MB env value", `{"pod":{"name":"web","spec":{"containers":[{"name":"app","image":"i","env":[{"name":"BIG","value":"` + big + `"}]}]}}}`, "pod.spec.containers[0].env[0].value"},
		{"ApplyPod", "1 MB argument", `{"pod":{"name":"web","spec":{"containers":[{"name":"app","image":"i","args":["` + big + `"]}]}}}`, "pod.spec.containers[0].args[0]"},
		{"ApplyPod", "1 MB name", `{"pod":` + named(big) + `}`, "pod.name"},
		{"ApplyPod", "10,000 containers", `{"pod":{"name":"web","spec":{"containers":` + many + `}}}`, "pod.spec"},
		{"ApplyPod", "garbage uid", `{"pod":` + pod(`"uid":"garbage-uid"`) + `}`, "pod.uid"},
		{"ApplyPod", "bad label", `{"pod":` + pod(`"labels":{"app":"has space"}`) + `}`, `pod.labels["app"]`},
		{"ApplyPod", "service environment name", `{"pod":` + pod(`"serviceEnvironment":{"A=B":"x"}`) + `}`, `pod.service_environment["A=B"]`},
		{"ApplyPod", "no pod", `{}`, "pod"},
		{"ApplyPod", "relative hostPath", `{"pod":{"name":"web","spec":{"volumes":[{"name":"h","hostPath":{"path":"etc"}}],"containers":[{"name":"app","image":"i"}]}}}`, "pod.spec.volumes[0].host_path.path"},
		{"ApplyPod", "image volume without a reference", `{"pod":{"name":"web","spec":{"volumes":[{"name":"t","image":{"pullPolicy":"IMAGE_PULL_POLICY_NEVER"}}],"containers":[{"name":"app","image":"i"}]}}}`, "pod.spec.volumes[0].image.reference"},
		{"ApplyPod", "mount of no volume", `{"pod":{"name":"web","spec":{"containers":[{"name":"app","image":"i","volumeMounts":[{"name":"v","mountPath":"/v"}]}]}}}`, "pod.spec.containers[0].volume_mounts[0].name"},
		{"ApplyConfigMap", "bad key", `{"configMap":{"name":"c","data":{"a/b":"x"}}}`, `config_map.data["a/b"]`},
		{"ApplyConfigMap", "no config map", `{}`, "config_map"},
		{"ApplySecret", "1 MB name", `{"secret":{"name":"` + big + `"}}`, "secret.name"},
		{"GetConfigMap", "no ref", `{}`, "ref"},
		{"GetSecret", "no name", `{"ref":{}}`, "ref.name"},
		{"ListSecrets", "bad namespace", `{"namespace":"Bad_NS"}`, "namespace"},
		{"DeleteConfigMap", "bad namespace", `{"ref":{"name":"c","namespace":"Bad_NS"}}`, "ref.namespace"},
		{"DeletePod", "no ref", `{}`, "pod"},
		{"DeletePod", "negative grace", `{"pod":{"name":"web"},"gracePeriodSeconds":"-1"}`, "grace_period_seconds"},
		{"DeletePod", "bad namespace", `{"pod":{"name":"web","namespace":"Bad_NS"}}`, "pod.namespace"},
		{"GetPod", "bad uid", `{"pod":{"uid":"garbage"}}`, "pod.uid"},
		{"GetPod", "1 MB name", `{"pod":{"name":"` + big + `"}}`, "pod.name"},
		{"ListPods", "namespace Bad_NS", `{"namespace":"Bad_NS"}`, "namespace"},
		{"ListPods", "1 MB namespace", `{"namespace":"` + big + `"}`, "namespace"},
		{"ListPods", "bad selector", `{"labelSelector":"a in (b"}`, "label_selector"},
		{"WatchPods", "namespace Bad_NS", `{"namespace":"Bad_NS"}`, "namespace"},
		{"WatchPods", "huge selector", `{"labelSelector":"` + big + `"}`, "label_selector"},
		// Executor.
		{"ApplyActions", "garbage uid", `{"pod":` + pod(`"uid":"garbage-uid"`) + `,"actions":{"createSandbox":true}}`, "pod.uid"},
		{"ApplyActions", "duplicate container names", `{"pod":{"uid":"` + uid + `","name":"web","spec":{"containers":[{"name":"a","image":"i"},{"name":"a","image":"i"}]}},"actions":{"createSandbox":true}}`, "pod.spec.containers[1].name"},
		{"ApplyActions", "10,000 containers", `{"pod":{"uid":"` + uid + `","name":"web","spec":{"containers":` + many + `}},"actions":{"createSandbox":true}}`, "pod.spec"},
		{"ApplyActions", "1 MB service variable", `{"pod":` + pod(`"uid":"`+uid+`","serviceEnvironment":{"BIG":"`+big+`"}`) + `,"actions":{"createSandbox":true}}`, `pod.service_environment["BIG"]`},
		{"ApplyActions", "no actions", `{"pod":` + pod(`"uid":"`+uid+`"`) + `}`, "actions"},
		{"ApplyActions", "a regular container kept running through a kill", `{"pod":` + pod(`"uid":"`+uid+`"`) + `,"actions":{"killPod":true,"sidecarsToKeepRunning":[{"name":"app"}]}}`, "actions.sidecars_to_keep_running[0].name"},
		{"ApplyActions", "resize of an unknown resource", `{"pod":` + pod(`"uid":"`+uid+`"`) + `,"actions":{"sandboxId":"s1","containersToUpdate":[{"containerId":"c1","name":"app","resource":"gpu","resources":{}}]}}`, "actions.containers_to_update[0].resource"},
		{"ApplyActions", "resize without resources", `{"pod":` + pod(`"uid":"`+uid+`"`) + `,"actions":{"sandboxId":"s1","containersToUpdate":[{"containerId":"c1","name":"app","resource":"cpu"}]}}`, "actions.containers_to_update[0].resources"},
		{"ApplyPod", "resize policy of an unknown resource", `{"pod":{"name":"web","spec":{"containers":[{"name":"app","image":"busybox:1.36","resizePolicy":[{"resourceName":"gpu"}]}]}}}`, "pod.spec.containers[0].resize_policy[0].resource_name"},
		{"RemoveResources", "empty id", `{"containerIds":[""]}`, "container_ids[0]"},
		{"ListBackoffs", "bad uid", `{"podUid":"garbage"}`, "pod_uid"},
		{"ResetBackoff", "no uid", `{}`, "pod_uid"},
		{"ExecSync", "no command", `{"containerId":"c1"}`, "command"},
		// Streaming RPCs: the first message's fields are bounded like every
		// other request's.
		{"PlannerService/Exec", "no start", `{}`, "start"},
		{"PlannerService/Exec", "1 MB argument", `{"start":{"pod":{"name":"web"},"container":"app","command":["sh","` + big + `"]}}`, "start.command[1]"},
		{"PlannerService/Exec", "2,000 arguments", `{"start":{"pod":{"name":"web"},"container":"app","command":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 2000), ",") + `]}}`, "start.command"},
		{"PlannerService/Exec", "container name climbing out", `{"start":{"pod":{"name":"web"},"container":"../etc","command":["sh"]}}`, "start.container"},
		{"PlannerService/Exec", "1 MB pod name", `{"start":{"pod":{"name":"` + big + `"},"container":"app","command":["sh"]}}`, "start.pod.name"},
		{"PlannerService/Exec", "over 1 MiB of stdin in one message", `{"start":{"pod":{"name":"web"},"container":"app","command":["cat"],"stdin":true},"input":{"stdin":"` + bigStdin + `"}}`, "input.stdin"},
		{"PlannerService/Attach", "no start", `{}`, "start"},
		{"PlannerService/Attach", "bad namespace", `{"start":{"pod":{"name":"web","namespace":"Bad_NS"},"container":"app"}}`, "start.pod.namespace"},
		{"PlannerService/Attach", "a terminal 70,000 columns wide", `{"start":{"pod":{"name":"web"},"container":"app","tty":true},"input":{"resize":{"width":70000,"height":24}}}`, "input.resize.width"},
		{"PlannerService/PortForward", "no start", `{}`, "start"},
		{"PlannerService/PortForward", "port 0", `{"start":{"pod":{"name":"web"}}}`, "start.port"},
		{"PlannerService/PortForward", "garbage uid", `{"start":{"pod":{"uid":"garbage"},"port":80}}`, "start.pod.uid"},
		{"PlannerService/PortForward", "over 1 MiB of data in one message", `{"start":{"pod":{"name":"web"},"port":80},"data":"` + bigStdin + `"}`, "data"},
		{"PlannerService/ContainerLogs", "no container", `{"pod":{"name":"web"}}`, "container"},
		{"PlannerService/ContainerLogs", "container name climbing out", `{"pod":{"name":"web"},"container":"../../etc"}`, "container"},
		{"PlannerService/ContainerLogs", "1 MB pod name", `{"pod":{"name":"` + big + `"},"container":"app"}`, "pod.name"},
		{"PlannerService/ContainerLogs", "negative tail", `{"pod":{"name":"web"},"container":"app","tailLines":"-1"}`, "tail_lines"},
		{"ExecutorService/Exec", "no start", `{}`, "start"},
		{"ExecutorService/Exec", "1 MB container id", `{"start":{"containerId":"` + big + `","command":["sh"]}}`, "start.container_id"},
		{"ExecutorService/Exec", "1 MB argument", `{"start":{"containerId":"c1","command":["` + big + `"]}}`, "start.command[0]"},
		{"ExecutorService/Exec", "over 1 MiB of stdin in one message", `{"start":{"containerId":"c1","command":["cat"],"stdin":true},"input":{"stdin":"` + bigStdin + `"}}`, "input.stdin"},
		{"ExecutorService/Attach", "no start", `{}`, "start"},
		{"ExecutorService/Attach", "1 MB container id", `{"start":{"containerId":"` + big + `"}}`, "start.container_id"},
		{"ExecutorService/Attach", "a terminal 70,000 rows high", `{"start":{"containerId":"c1","tty":true},"input":{"resize":{"width":80,"height":70000}}}`, "input.resize.height"},
		{"ExecutorService/PortForward", "no start", `{}`, "start"},
		{"ExecutorService/PortForward", "port 70000", `{"start":{"podUid":"` + uid + `","port":70000}}`, "start.port"},
		{"ExecutorService/PortForward", "1 MB pod uid", `{"start":{"podUid":"` + big + `","port":80}}`, "start.pod_uid"},
		{"ExecutorService/PortForward", "over 1 MiB of data in one message", `{"start":{"podUid":"` + uid + `","port":80},"data":"` + bigStdin + `"}`, "data"},
		{"ExecutorService/ContainerLogs", "no pod uid", `{"container":"app"}`, "pod_uid"},
		{"ExecutorService/ContainerLogs", "container name climbing out", `{"podUid":"` + uid + `","container":"../x"}`, "container"},
		{"ExecutorService/ContainerLogs", "negative tail", `{"podUid":"` + uid + `","container":"app","tailLines":"-1"}`, "tail_lines"},
		{"UpdatePodVolumes", "no pod", `{}`, "pod"},
		{"RemovePodVolumes", "a path for a uid", `{"podUid":"../../etc"}`, "pod_uid"},
		{"GetEmptyDirUsage", "a path for a volume name", `{"podUid":"` + uid + `","volumeNames":["../x"]}`, "volume_names[0]"},
		{"GetEmptyDirUsage", "no volume names", `{"podUid":"` + uid + `"}`, "volume_names"},
		// PLEG.
		{"Watch", "empty uid", `{"podUids":["a",""]}`, "pod_uids[1]"},
		{"Watch", "duplicate uid", `{"podUids":["a","a"]}`, "pod_uids[1]"},
		{"GetPodStatus", "no uid", `{}`, "pod_uid"},
		{"GetPodStatus", "huge uid", `{"podUid":"` + big + `"}`, "pod_uid"},
	}
}

// methodKey is "Service/Method".
func methodKey(md protoreflect.MethodDescriptor) string {
	return string(md.Parent().Name()) + "/" + string(md.Name())
}

// stringPath finds a string field of md, at most two levels down, and
// returns its path and the numbers leading to it.
func stringPath(md protoreflect.MessageDescriptor, depth int) (string, []protowire.Number) {
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Kind() == protoreflect.StringKind && !fd.IsMap() {
			name := string(fd.Name())
			if fd.IsList() {
				name += "[0]"
			}
			return name, []protowire.Number{fd.Number()}
		}
	}
	if depth == 0 {
		return "", nil
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Kind() == protoreflect.MessageKind && !fd.IsMap() {
			if p, nums := stringPath(fd.Message(), depth-1); p != "" {
				name := string(fd.Name())
				if fd.IsList() {
					name += "[0]"
				}
				return name + "." + p, append([]protowire.Number{fd.Number()}, nums...)
			}
		}
	}
	return "", nil
}

// nest wraps inner in length-delimited fields nums[len-1] ... nums[0].
func nest(nums []protowire.Number, inner []byte) []byte {
	b := inner
	for i := len(nums) - 1; i >= 0; i-- {
		b = protowire.AppendBytes(protowire.AppendTag(nil, nums[i], protowire.BytesType), b)
	}
	return b
}

// wireCase is malformed bytes for a method.
type wireCase struct {
	name  string
	req   []byte
	field string // "" when only "does not decode" can be said
}

func wireCases(md protoreflect.MethodDescriptor) []wireCase {
	truncated := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), 50)
	var deep []byte
	for range 20000 {
		deep = protowire.AppendTag(deep, 999, protowire.StartGroupType)
	}
	for range 20000 {
		deep = protowire.AppendTag(deep, 999, protowire.EndGroupType)
	}
	cases := []wireCase{
		{"truncated", truncated, ""},
		{"cut in a tag", []byte{0x80}, ""},
		{"nested 20,000 deep", deep, ""},
	}
	if path, nums := stringPath(md.Input(), 2); path != "" {
		last := nums[len(nums)-1]
		bad := protowire.AppendBytes(protowire.AppendTag(nil, last, protowire.BytesType), []byte("\xc3\x28bad"))
		cases = append(cases, wireCase{"invalid UTF-8", nest(nums[:len(nums)-1], bad), path})
	}
	return cases
}

// check asserts InvalidArgument naming field (or saying the request does
// not decode), with a bounded message.
func check(t *testing.T, err error, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code %v (%.300v), want InvalidArgument", st.Code(), err)
	}
	if len(st.Message()) > 8<<10 {
		t.Errorf("message of %d bytes", len(st.Message()))
	}
	if field == "" {
		if !strings.Contains(st.Message(), "does not decode") {
			t.Errorf("message %.300q does not say the request does not decode", st.Message())
		}
		return
	}
	if !strings.Contains(st.Message(), field+": ") {
		t.Errorf("message %.300q does not name %s", st.Message(), field)
	}
	found := false
	for _, fe := range fielderr.FromStatus(st) {
		found = found || fe.Path == field
	}
	if !found {
		t.Errorf("no BadRequest violation for %s", field)
	}
}

// TestBadInputEveryRPC: a malformed request to any RPC of the planner,
// the executor or the PLEG is refused with InvalidArgument naming the
// field, and leaves nothing behind.
func TestBadInputEveryRPC(t *testing.T) {
	n := startNode(t)
	services := []protoreflect.ServiceDescriptor{
		plannerv1.File_syncpod_planner_v1_planner_proto.Services().Get(0),
		executorv1.File_syncpod_executor_v1_executor_proto.Services().Get(0),
		plegv1.File_syncpod_pleg_v1_pleg_proto.Services().Get(0),
		syncpodv1.File_syncpod_v1_version_proto.Services().Get(0),
	}
	// By "Service/Method", and by the method's name alone where only one
	// service has it.
	methods := map[string]protoreflect.MethodDescriptor{}
	seen := map[string]int{}
	for _, sd := range services {
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			methods[methodKey(md)] = md
			methods[string(md.Name())] = md
			seen[string(md.Name())]++
		}
	}
	for name, n := range seen {
		if n > 1 {
			delete(methods, name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tried := map[string]int{}
	total := 0
	for _, jc := range jsonCases() {
		md, ok := methods[jc.method]
		if !ok {
			t.Fatalf("no method %s", jc.method)
		}
		t.Run("json/"+jc.method+"/"+jc.name, func(t *testing.T) {
			mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
			if err != nil {
				t.Fatal(err)
			}
			msg := mt.New().Interface()
			if err := protojson.Unmarshal([]byte(jc.json), msg); err != nil {
				t.Fatalf("the case's JSON: %v", err)
			}
			b, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			check(t, call(ctx, n.conns[string(md.Parent().FullName())], md, b), jc.field)
		})
		tried[methodKey(md)]++
		total++
	}
	for _, sd := range services {
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			for _, wc := range wireCases(md) {
				t.Run("wire/"+string(md.Name())+"/"+wc.name, func(t *testing.T) {
					check(t, call(ctx, n.conns[string(sd.FullName())], md, wc.req), wc.field)
				})
				tried[methodKey(md)]++
				total++
			}
		}
	}
	for _, sd := range services {
		for i := range sd.Methods().Len() {
			key := methodKey(sd.Methods().Get(i))
			t.Logf("%s: %d bad inputs", key, tried[key])
			if tried[key] < 3 {
				t.Errorf("%s has only %d bad inputs in the table", key, tried[key])
			}
		}
	}

	// Nothing was stored, created, pulled or stopped.
	cms, err := n.pods.ListConfigMaps(ctx, "")
	if err != nil || len(cms) != 0 {
		t.Errorf("planner stored %d config maps (%v)", len(cms), err)
	}
	secs, err := n.pods.ListSecrets(ctx, "")
	if err != nil || len(secs) != 0 {
		t.Errorf("planner stored %d secrets (%v)", len(secs), err)
	}
	recs, err := n.pods.List(ctx, store.Filter{})
	if err != nil || len(recs) != 0 {
		t.Errorf("planner stored %d pods (%v)", len(recs), err)
	}
	calls := n.runtime.GetCalls()
	if len(calls) != 0 {
		t.Errorf("the runtime was called: %v", calls)
	}
	imageCalls := critest.ImageCalls(n.images)
	if len(imageCalls) != 0 {
		t.Errorf("the image service was called: %v", imageCalls)
	}
	entries, err := n.backoff.List("")
	if err != nil || len(entries) != 0 {
		t.Errorf("back-off entries: %v %v", entries, err)
	}
	// Every service still answers.
	pc := plegv1.NewPlegServiceClient(n.conns[plegv1.PlegService_ServiceDesc.ServiceName])
	if _, err := pc.ListPodStatuses(ctx, &plegv1.ListPodStatusesRequest{}); err != nil {
		t.Errorf("PLEG after bad input: %v", err)
	}
	testsummary.Record(t, "bad inputs tried: %d; stored=%d runtime_calls=%d image_calls=%d backoff_entries=%d",
		total, len(cms)+len(secs)+len(recs), len(calls), len(imageCalls), len(entries))
}
