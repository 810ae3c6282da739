package server

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/proto/fielderr"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// rawCodec sends and receives the bytes it is given, so a test can put
// anything on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "proto" }

// badString is field num holding the bytes of a string that is not UTF-8.
func badString(num protowire.Number) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), []byte("bad\xff\xfe"))
}

// TestUndecodableRequestIsInvalidArgument: invalid UTF-8 is not an
// Internal error on any service. Over a real socket, unary and
// streaming, a request that does not decode is InvalidArgument, naming the
// field when it is a bad string; the server goes on serving.
func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	r := runServer(t, Options{})
	waitServing(t, r.conn)
	ctx := context.Background()
	truncated := protowire.AppendTag(nil, 1, protowire.BytesType)
	truncated = protowire.AppendVarint(truncated, 50) // 50 bytes announced, none sent
	for _, tc := range []struct {
		name  string
		req   []byte
		field string // "" when no field can be named
	}{
		{"invalid UTF-8", badString(1), "service"},
		{"truncated", truncated, ""},
	} {
		t.Run(tc.name+" unary", func(t *testing.T) {
			var out []byte
			err := r.conn.Invoke(ctx, "/grpc.health.v1.Health/Check", &tc.req, &out, grpc.ForceCodecV2(rawCodec{}))
			checkDecodeError(t, err, tc.field)
		})
		t.Run(tc.name+" stream", func(t *testing.T) {
			st, err := r.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/grpc.health.v1.Health/Watch", grpc.ForceCodecV2(rawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SendMsg(&tc.req); err != nil {
				t.Fatal(err)
			}
			_ = st.CloseSend()
			var out []byte
			checkDecodeError(t, st.RecvMsg(&out), tc.field)
		})
	}
	// The same connection still works.
	if resp, err := healthpb.NewHealthClient(r.conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check after bad requests: %v %v", resp, err)
	}
}

func checkDecodeError(t *testing.T, err error, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code %v (%v), want InvalidArgument", st.Code(), err)
	}
	want := "does not decode"
	if field != "" {
		want = field + ": string field contains invalid UTF-8"
	}
	if !strings.Contains(st.Message(), want) {
		t.Errorf("message %q lacks %q", st.Message(), want)
	}
	var got []string
	for _, fe := range fielderr.FromStatus(st) {
		got = append(got, fe.Path)
	}
	if len(got) != 1 || got[0] != field {
		t.Errorf("BadRequest fields %q, want [%q]", got, field)
	}
}

// TestInvalidUTF8Path names the bad string anywhere in a syncpod request:
// nested, repeated, in a map key or value.
func TestInvalidUTF8Path(t *testing.T) {
	// protobuf-go never writes invalid UTF-8, so a marker byte (DEL, which
	// no tag or short length takes) is written and turned into 0xff.
	const marker = "\x7f"
	pod := func() *syncpodv1.Pod {
		return &syncpodv1.Pod{Name: "web", Labels: map[string]string{"app": "web"}, Spec: &syncpodv1.PodSpec{
			Containers: []*syncpodv1.Container{{Name: "a", Image: "i"}, {Name: "b", Image: "i", Args: []string{"x", "y"}}},
		}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(p *syncpodv1.Pod)
		want   string
	}{
		{"top-level", func(p *syncpodv1.Pod) { p.Name = marker }, "pod.name"},
		{"repeated message", func(p *syncpodv1.Pod) { p.Spec.Containers[1].Image = marker }, "pod.spec.containers[1].image"},
		{"repeated string", func(p *syncpodv1.Pod) { p.Spec.Containers[1].Args[1] = marker }, "pod.spec.containers[1].args[1]"},
		{"map value", func(p *syncpodv1.Pod) { p.Labels["app"] = marker }, `pod.labels["app"]`},
		{"map key", func(p *syncpodv1.Pod) { p.Labels = map[string]string{marker: "v"} }, "pod.labels[key]"},
		{"none", func(*syncpodv1.Pod) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod()
			tc.mutate(p)
			b, err := proto.Marshal(&plannerv1.ApplyPodRequest{Pod: p})
			if err != nil {
				t.Fatal(err)
			}
			b = bytes.ReplaceAll(b, []byte(marker), []byte{0xff})
			if err := proto.Unmarshal(b, &plannerv1.ApplyPodRequest{}); (err != nil) != (tc.want != "") {
				t.Fatalf("unmarshal error %v, want one: %v", err, tc.want != "")
			}
			if got := invalidUTF8Path(b, (&plannerv1.ApplyPodRequest{}).ProtoReflect().Descriptor(), 0); got != tc.want {
				t.Errorf("path %q, want %q", got, tc.want)
			}
		})
	}
}

// countingCodec is gRPC's protobuf codec counting what it does.
type countingCodec struct {
	encoding.CodecV2
	mu                   sync.Mutex
	marshals, unmarshals int
}

func (c *countingCodec) Marshal(v any) (mem.BufferSlice, error) {
	c.mu.Lock()
	c.marshals++
	c.mu.Unlock()
	return c.CodecV2.Marshal(v)
}

func (c *countingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.mu.Lock()
	c.unmarshals++
	c.mu.Unlock()
	return c.CodecV2.Unmarshal(data, v)
}

// The codec passed in Options is the one the server encodes and decodes
// with (syncpod-crisim passes its list codec), still answering a request
// it cannot decode with InvalidArgument.
func TestTheServerUsesTheCodecItIsGiven(t *testing.T) {
	codec := &countingCodec{CodecV2: encoding.GetCodecV2(grpcproto.Name)}
	r := runServer(t, Options{Codec: codec})
	waitServing(t, r.conn)
	codec.mu.Lock()
	m, u := codec.marshals, codec.unmarshals
	codec.mu.Unlock()
	if m == 0 || u == 0 {
		t.Fatalf("the given codec encoded %d and decoded %d messages, want the health checks'", m, u)
	}
	req := badString(1)
	var out []byte
	err := r.conn.Invoke(context.Background(), "/grpc.health.v1.Health/Check", &req, &out, grpc.ForceCodecV2(rawCodec{}))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("undecodable request: %v, want InvalidArgument", err)
	}
}
