package listcodec

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func container(i int, state runtimeapi.ContainerState) *runtimeapi.Container {
	id := "c" + strconv.Itoa(i)
	return &runtimeapi.Container{
		Id: id, PodSandboxId: "s" + strconv.Itoa(i/2),
		Metadata: &runtimeapi.ContainerMetadata{Name: "app" + strconv.Itoa(i%2), Attempt: uint32(i % 3)},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:1.36"},
		ImageRef: "sha256:" + id, ImageId: "sha256:" + id,
		State:     state,
		CreatedAt: int64(1_700_000_000_000_000_000 + i),
		Labels: map[string]string{"io.kubernetes.pod.uid": "uid-" + strconv.Itoa(i/2), "io.kubernetes.container.name": "app",
			"syncpod.io/managed": "true", "syncpod.io/spec-hash": "h" + strconv.Itoa(i)},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": strconv.Itoa(i % 5)},
	}
}

func sandbox(i int) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id: "s" + strconv.Itoa(i), Metadata: &runtimeapi.PodSandboxMetadata{Name: "p" + strconv.Itoa(i), Uid: "uid-" + strconv.Itoa(i), Namespace: "default"},
		State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: int64(i),
		Labels: map[string]string{"io.kubernetes.pod.uid": "uid-" + strconv.Itoa(i)}, RuntimeHandler: "runc",
	}
}

// frames splits b into three buffers, as a message read from the wire
// in several frames arrives.
func frames(b []byte) mem.BufferSlice {
	a, c := len(b)/3, 2*len(b)/3
	return mem.BufferSlice{mem.SliceBuffer(b[:a]), mem.SliceBuffer(b[a:c]), mem.SliceBuffer(b[c:])}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newCodec(now func() time.Time) *Codec {
	return New(encoding.GetCodecV2(Name), now)
}

// A Codec is used only where it is passed: making one leaves gRPC's
// protobuf codec, which every other connection of the process uses, as
// it was.
func TestMakingACodecLeavesGRPCsProtobufCodecAlone(t *testing.T) {
	c := NewGRPC()
	if got := encoding.GetCodecV2(Name); got != c.inner {
		t.Fatalf("gRPC's proto codec is %T, want the one the Codec wraps", got)
	}
	if _, wrapped := c.inner.(*Codec); wrapped || c.inner == nil || c.inner.Name() != "proto" {
		t.Fatalf("inner codec %v", c.inner)
	}
}

// A relist's list answers decode to exactly what protobuf decodes, and
// an item whose bytes did not change since the last answer is the same
// message, not a new decoding (R-13.2: every relist lists everything).
func TestARelistDecodesOnlyTheItemsThatChanged_R13_2(t *testing.T) {
	c := newCodec(time.Now)
	resp := &runtimeapi.ListContainersResponse{}
	for i := range 50 {
		resp.Containers = append(resp.Containers, container(i, runtimeapi.ContainerState_CONTAINER_RUNNING))
	}
	decode := func() *runtimeapi.ListContainersResponse {
		t.Helper()
		b := marshal(t, resp)
		got, want := &runtimeapi.ListContainersResponse{}, &runtimeapi.ListContainersResponse{}
		if err := c.Unmarshal(frames(b), got); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(b, want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("cached decoding differs from protobuf's:\n got %v\nwant %v", got, want)
		}
		return got
	}
	first := decode()
	if s := c.Stats(); s.Decoded != 50 || s.Reused != 0 || s.Kept != 50 {
		t.Fatalf("first answer: %+v, want 50 decoded, 50 kept", s)
	}
	resp.Containers[7] = container(7, runtimeapi.ContainerState_CONTAINER_EXITED)
	resp.Containers = append(resp.Containers, container(50, runtimeapi.ContainerState_CONTAINER_CREATED))
	second := decode()
	if s := c.Stats(); s.Decoded != 52 || s.Reused != 49 || s.Kept != 52 {
		t.Fatalf("second answer: %+v, want 52 decoded (the changed and the new one), 49 reused, 52 kept", s)
	}
	for i := range 50 {
		same := first.Containers[i] == second.Containers[i]
		if same == (i == 7) {
			t.Errorf("container %d: same message %v, want %v", i, same, i != 7)
		}
	}
	if second.Containers[7].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("changed container decoded as %v", second.Containers[7].GetState())
	}
}

func TestSandboxListsAreCachedToo_R13_2(t *testing.T) {
	c := newCodec(time.Now)
	resp := &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{sandbox(1), sandbox(2)}}
	var got [2]*runtimeapi.ListPodSandboxResponse
	for i := range got {
		got[i] = &runtimeapi.ListPodSandboxResponse{}
		if err := c.Unmarshal(frames(marshal(t, resp)), got[i]); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got[i], resp) {
			t.Fatalf("decoded %v, want %v", got[i], resp)
		}
	}
	if got[0].Items[1] != got[1].Items[1] {
		t.Fatal("an unchanged sandbox was decoded again")
	}
	if s := c.Stats(); s.Decoded != 2 || s.Reused != 2 {
		t.Fatalf("%+v, want 2 decoded and 2 reused", s)
	}
}

// An item's unknown fields (a newer runtime's) are part of its bytes and
// survive decoding; an answer with a field besides its list is left
// whole to protobuf, and nothing of it is kept.
func TestAnswersTheCacheDoesNotReadAreDecodedByProtobuf(t *testing.T) {
	c := newCodec(time.Now)
	item := marshal(t, container(1, runtimeapi.ContainerState_CONTAINER_RUNNING))
	item = protowire.AppendTag(item, 99, protowire.VarintType)
	item = protowire.AppendVarint(item, 7)
	withUnknown := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), item)
	got := &runtimeapi.ListContainersResponse{}
	if err := c.Unmarshal(frames(withUnknown), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Containers) != 1 || len(got.Containers[0].ProtoReflect().GetUnknown()) == 0 {
		t.Fatalf("the item's unknown field was lost: %v", got)
	}
	want1 := &runtimeapi.Container{}
	if err := proto.Unmarshal(item, want1); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got.Containers[0], want1) {
		t.Fatalf("decoded %v, want %v", got.Containers[0], want1)
	}

	extra := protowire.AppendVarint(protowire.AppendTag(marshal(t, &runtimeapi.ListContainersResponse{
		Containers: []*runtimeapi.Container{container(2, runtimeapi.ContainerState_CONTAINER_RUNNING)}}), 2, protowire.VarintType), 1)
	before := c.Stats()
	got = &runtimeapi.ListContainersResponse{}
	if err := c.Unmarshal(frames(extra), got); err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.ListContainersResponse{}
	if err := proto.Unmarshal(extra, want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) || len(got.ProtoReflect().GetUnknown()) == 0 {
		t.Fatalf("decoded %v, want %v with its unknown field", got, want)
	}
	if c.Stats() != before {
		t.Fatalf("an answer left to protobuf changed the cache: %+v, was %+v", c.Stats(), before)
	}
}

// A malformed answer fails as protobuf fails it (a field of the wrong
// wire type is no failure for protobuf, which keeps it as unknown, nor
// here), and nothing of it is kept; a good item before the bad one is not
// kept either.
func TestAMalformedAnswerFailsAndKeepsNothing(t *testing.T) {
	good := marshal(t, &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{container(1, runtimeapi.ContainerState_CONTAINER_RUNNING)}})
	badUTF8 := container(2, runtimeapi.ContainerState_CONTAINER_RUNNING)
	badUTF8.Labels["k"] = "\xff"
	badItem := marshal(t, &runtimeapi.Container{Id: "x"})
	badItem = append(badItem, protowire.AppendTag(nil, 8, protowire.BytesType)...) // a map entry with no length
	for name, b := range map[string][]byte{
		"truncated":   good[:len(good)-3],
		"bad tag":     append(append([]byte{}, good...), 0),
		"bad item":    append(append([]byte{}, good...), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), badItem)...),
		"bad UTF-8":   append(append([]byte{}, good...), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), encodeUnchecked(badUTF8))...),
		"wrong type":  protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 3),
		"empty bytes": {},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCodec(time.Now)
			got := &runtimeapi.ListContainersResponse{}
			err := c.Unmarshal(frames(b), got)
			perr := proto.Unmarshal(b, &runtimeapi.ListContainersResponse{})
			if (err == nil) != (perr == nil) {
				t.Fatalf("error %v, protobuf's %v", err, perr)
			}
			if name == "empty bytes" {
				if err != nil || len(got.Containers) != 0 {
					t.Fatalf("an empty answer: %v, %v", got, err)
				}
				return
			}
			if err == nil && name != "wrong type" {
				t.Fatalf("malformed answer decoded as %v", got)
			}
			if s := c.Stats(); s.Kept != 0 {
				t.Fatalf("a failed answer left %d items kept", s.Kept)
			}
		})
	}
}

// encodeUnchecked encodes m's id and labels without protobuf's UTF-8
// check, as a runtime that does not check would send them.
func encodeUnchecked(m *runtimeapi.Container) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, m.Id)
	for k, v := range m.Labels {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, v)
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b
}

// Items no answer held for Retention are dropped, at most one sweep per
// tenth of it; those still listed stay.
func TestItemsNoLongerListedAreDropped(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newCodec(func() time.Time { return now })
	list := func(ids ...int) {
		t.Helper()
		resp := &runtimeapi.ListContainersResponse{}
		for _, i := range ids {
			resp.Containers = append(resp.Containers, container(i, runtimeapi.ContainerState_CONTAINER_RUNNING))
		}
		if err := c.Unmarshal(frames(marshal(t, resp)), &runtimeapi.ListContainersResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	list(1, 2, 3)
	now = now.Add(Retention / 2)
	list(1) // a per-pod list: 2 and 3 are kept although not in it
	if k := c.Stats().Kept; k != 3 {
		t.Fatalf("kept %d, want 3", k)
	}
	now = now.Add(Retention/2 + time.Second)
	list(1)
	if k := c.Stats().Kept; k != 1 {
		t.Fatalf("kept %d after 2 and 3 went unlisted for longer than %v, want 1", k, Retention)
	}
}

func TestOtherMessagesGoToGRPCsCodec(t *testing.T) {
	c := newCodec(time.Now)
	in := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "c1", ExitCode: 3}}
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := &runtimeapi.ContainerStatusResponse{}
	if err := c.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Fatalf("%v, want %v", out, in)
	}
	if c.Stats() != (Stats{}) {
		t.Fatalf("a status answer touched the list caches: %+v", c.Stats())
	}
}

// Many relists at once (the PLEG's global relist beside its per-pod
// ones) each get a whole, correct answer; run with -race.
func TestConcurrentListsShareTheCache(t *testing.T) {
	c := newCodec(time.Now)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for round := range 20 {
				resp := &runtimeapi.ListContainersResponse{}
				for i := range 30 {
					st := runtimeapi.ContainerState_CONTAINER_RUNNING
					if (i+round+g)%7 == 0 {
						st = runtimeapi.ContainerState_CONTAINER_EXITED
					}
					resp.Containers = append(resp.Containers, container(i, st))
				}
				b, err := proto.Marshal(resp)
				if err != nil {
					t.Error(err)
					return
				}
				got := &runtimeapi.ListContainersResponse{}
				if err := c.Unmarshal(frames(b), got); err != nil {
					t.Error(err)
					return
				}
				if !proto.Equal(got, resp) {
					t.Errorf("goroutine %d round %d: wrong answer", g, round)
					return
				}
				_ = proto.Size(got) // a reader of shared items, as the PLEG's encoding of statuses is
			}
		})
	}
	wg.Wait()
	if s := c.Stats(); s.Reused == 0 || s.Kept > 60 {
		t.Fatalf("%+v: want reuse, at most 60 distinct items kept", s)
	}
}

// gRPC's encoder writes a map's entries in Go's random map order, so one
// item arrives in different bytes from answer to answer: it is still one
// item kept, nested maps (the image's annotations) included.
func TestAnItemIsRecognisedWhateverOrderItsMapsCameIn_R13_2(t *testing.T) {
	c := newCodec(time.Now)
	item := container(1, runtimeapi.ContainerState_CONTAINER_RUNNING)
	for i := range 8 {
		item.Labels[fmt.Sprint("l", i)] = "v"
		item.Annotations[fmt.Sprint("a", i)] = "v"
	}
	item.Image.Annotations = map[string]string{"x": "1", "y": "2", "z": "3"}
	resp := &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{item}}
	encodings := map[string]bool{}
	for range 20 {
		b := marshal(t, resp)
		encodings[string(b)] = true
		got := &runtimeapi.ListContainersResponse{}
		if err := c.Unmarshal(frames(b), got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, resp) {
			t.Fatalf("decoded %v, want %v", got, resp)
		}
	}
	if len(encodings) < 2 {
		t.Fatalf("20 encodings were all alike: the test does not test what it says")
	}
	if s := c.Stats(); s.Decoded != 1 || s.Reused != 19 || s.Kept != 1 {
		t.Fatalf("%d different encodings of one item: %+v, want 1 decoded, 19 reused, 1 kept", len(encodings), s)
	}
}

// A map holding one key twice decodes to its last entry, as protobuf's
// does; sorting would change which is last, so such an item is decoded
// every time, never kept.
func TestAnItemWithADuplicateMapKeyIsNeverKept(t *testing.T) {
	entry := func(k, v string) []byte {
		e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
		return protowire.AppendString(protowire.AppendTag(e, 2, protowire.BytesType), v)
	}
	item := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "c1")
	for _, v := range []string{"b", "a"} { // sorted, "a" would be first and "b" would win
		item = protowire.AppendBytes(protowire.AppendTag(item, 8, protowire.BytesType), entry("k", v))
	}
	answer := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), item)
	c := newCodec(time.Now)
	for range 2 {
		got := &runtimeapi.ListContainersResponse{}
		if err := c.Unmarshal(frames(answer), got); err != nil {
			t.Fatal(err)
		}
		if v := got.Containers[0].Labels["k"]; v != "a" {
			t.Fatalf("label k = %q, want the last entry's %q", v, "a")
		}
	}
	if s := c.Stats(); s.Kept != 0 || s.Decoded != 2 {
		t.Fatalf("%+v, want 2 decoded and none kept", s)
	}
}

// A server that keeps the items it lists sends each one's kept encoding:
// the answer decodes to what it holds, an item it replaced (a changed
// container) is encoded anew.
func TestAServerSendsTheKeptEncodingOfAnItemItListedBefore_R13_2(t *testing.T) {
	c := newCodec(time.Now)
	resp := &runtimeapi.ListContainersResponse{}
	for i := range 20 {
		resp.Containers = append(resp.Containers, container(i, runtimeapi.ContainerState_CONTAINER_RUNNING))
	}
	send := func() {
		t.Helper()
		data, err := c.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		got := &runtimeapi.ListContainersResponse{}
		if err := proto.Unmarshal(data.Materialize(), got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, resp) {
			t.Fatalf("sent %v, want %v", got, resp)
		}
	}
	send()
	resp.Containers[3] = container(3, runtimeapi.ContainerState_CONTAINER_EXITED) // the runtime replaces what changed
	send()
	if s := c.Stats(); s.Encoded != 21 || s.EncodingsReused != 19 || s.EncodingsKept != 21 {
		t.Fatalf("%+v, want 21 encoded, 19 reused, 21 kept", s)
	}

	sbs := &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{sandbox(1), sandbox(2)}}
	for range 2 {
		data, err := c.Marshal(sbs)
		if err != nil {
			t.Fatal(err)
		}
		got := &runtimeapi.ListPodSandboxResponse{}
		if err := proto.Unmarshal(data.Materialize(), got); err != nil || !proto.Equal(got, sbs) {
			t.Fatalf("sent %v (%v), want %v", got, err, sbs)
		}
	}
	if s := c.Stats(); s.Encoded != 23 || s.EncodingsReused != 21 {
		t.Fatalf("%+v, want 23 encoded and 21 reused after the sandboxes", s)
	}
}

// What the encoding cache does not take, gRPC's codec encodes as it would
// have: an answer with an unknown field of its own, an empty answer, a
// list holding a nil item.
func TestAnswersTheEncodingCacheDoesNotTakeGoToGRPCsCodec(t *testing.T) {
	c := newCodec(time.Now)
	inner := c.inner
	withUnknown := &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{container(1, runtimeapi.ContainerState_CONTAINER_RUNNING)}}
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 5))
	for name, m := range map[string]proto.Message{
		"unknown field": withUnknown,
		"empty":         &runtimeapi.ListContainersResponse{},
		"nil item":      &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{sandbox(1), nil}},
	} {
		got, err := c.Marshal(m)
		want, werr := inner.Marshal(m)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: error %v, gRPC's %v", name, err, werr)
		}
		if err == nil && !proto.Equal(unmarshalAs(t, got, m), unmarshalAs(t, want, m)) {
			t.Fatalf("%s: encoded differently from gRPC's codec", name)
		}
	}
	if s := c.Stats(); s.EncodingsKept != 0 || s.Encoded != 0 {
		t.Fatalf("%+v: the encoding cache took an answer it should have left", s)
	}
}

func unmarshalAs(t *testing.T, data mem.BufferSlice, like proto.Message) proto.Message {
	t.Helper()
	m := like.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(data.Materialize(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEncodingsNoLongerSentAreDropped(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newCodec(func() time.Time { return now })
	a, b := container(1, runtimeapi.ContainerState_CONTAINER_RUNNING), container(2, runtimeapi.ContainerState_CONTAINER_RUNNING)
	send := func(items ...*runtimeapi.Container) {
		t.Helper()
		if _, err := c.Marshal(&runtimeapi.ListContainersResponse{Containers: items}); err != nil {
			t.Fatal(err)
		}
	}
	send(a, b)
	now = now.Add(Retention / 2)
	send(a)
	now = now.Add(Retention/2 + time.Second)
	send(a)
	if k := c.Stats().EncodingsKept; k != 1 {
		t.Fatalf("kept %d encodings after b went unsent for longer than %v, want 1", k, Retention)
	}
}

func TestConcurrentAnswersShareTheEncodings(t *testing.T) {
	c := newCodec(time.Now)
	items := make([]*runtimeapi.Container, 40)
	for i := range items {
		items[i] = container(i, runtimeapi.ContainerState_CONTAINER_RUNNING)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for round := range 20 {
				resp := &runtimeapi.ListContainersResponse{Containers: items[(g+round)%10 : 31+(g+round)%10]}
				data, err := c.Marshal(resp)
				if err != nil {
					t.Error(err)
					return
				}
				got := &runtimeapi.ListContainersResponse{}
				if err := c.Unmarshal(data, got); err != nil || !proto.Equal(got, resp) {
					t.Errorf("goroutine %d round %d: wrong answer (%v)", g, round, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if s := c.Stats(); s.Encoded != 40 || s.EncodingsKept != 40 {
		t.Fatalf("%+v: want each of the 40 items encoded once", s)
	}
}
