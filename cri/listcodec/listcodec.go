// Package listcodec makes the two CRI list answers a PLEG asks for every
// relist cheap to encode and to decode when little has changed since the
// last one.
//
// A relist at 2,000 containers spends most of its time in protobuf-go's
// reflective encoding (in the runtime) and decoding (in the PLEG) of
// ListContainers' and ListPodSandbox's answers, mostly their label and
// annotation maps, though nearly every item is what the previous relist
// got. A Codec is gRPC's protobuf codec with those two answers handled
// item by item; it changes nothing in gRPC's codec registry and is used
// only where it is passed: DialOption (or CallOption) on a client
// connection, ServerOption on a server.
//
//   - Decoding (a client: the PLEG) keeps each decoded item, keyed by its
//     encoding with each map's entries in a fixed order (encoders write
//     them in Go's random map order): an item encoded as one seen before
//     is the same message as before, not a new decoding of it. The items
//     of a decoded answer are shared with earlier and later answers, so a
//     caller must treat them as read-only (the PLEG does).
//   - Encoding (a server: crisim) keeps each item's encoding, keyed by the
//     item message itself (its pointer). This is for a runtime that keeps
//     the item it lists and hands out a new one when something in it
//     changes, as crisim does: on a server using a Codec, a list item
//     once sent must never be modified.
//
// Every other message, and an answer holding any field but its list, goes
// to gRPC's own codec. Items (and encodings) not seen for Retention are
// dropped; Limit bounds the number kept.
package listcodec

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Name is the codec's name, gRPC's protobuf codec's: a connection using
// it speaks plain gRPC protobuf on the wire.
const Name = grpcproto.Name

// Retention is how long an item is kept after the last answer that held
// it: longer than the PLEG's relist period in evented mode (5 minutes),
// so the rare global relist of an evented PLEG finds its items still kept
// although many per-pod lists ran in between.
const Retention = 10 * time.Minute

// Limit bounds the items (and the encodings) kept per list kind; past it
// the cache starts over (the next answer decodes, or encodes, everything
// again).
const Limit = 50_000

// Codec is gRPC's protobuf codec with cached encoding and decoding of
// the CRI list answers. Safe for concurrent use.
type Codec struct {
	inner        encoding.CodecV2
	containers   *cache[*runtimeapi.Container]
	sandboxes    *cache[*runtimeapi.PodSandbox]
	containerEnc *encCache[*runtimeapi.Container]
	sandboxEnc   *encCache[*runtimeapi.PodSandbox]
}

// New wraps inner (gRPC's protobuf codec); now is the clock of the
// retention.
func New(inner encoding.CodecV2, now func() time.Time) *Codec {
	return &Codec{
		inner:      inner,
		containers: newCache(now, func() *runtimeapi.Container { return new(runtimeapi.Container) }),
		sandboxes:  newCache(now, func() *runtimeapi.PodSandbox { return new(runtimeapi.PodSandbox) }),

		containerEnc: newEncCache[*runtimeapi.Container](now),
		sandboxEnc:   newEncCache[*runtimeapi.PodSandbox](now),
	}
}

// NewGRPC wraps gRPC's own protobuf codec, on the wall clock: the Codec
// a binary makes and passes to its connections.
func NewGRPC() *Codec {
	return New(encoding.GetCodecV2(grpcproto.Name), time.Now)
}

// DialOption makes c the codec of every call on a client connection.
func (c *Codec) DialOption() grpc.DialOption {
	return grpc.WithDefaultCallOptions(c.CallOption())
}

// CallOption makes c the codec of one call.
func (c *Codec) CallOption() grpc.CallOption { return grpc.ForceCodecV2(c) }

// ServerOption makes c the codec of every call a server receives.
func (c *Codec) ServerOption() grpc.ServerOption { return grpc.ForceServerCodecV2(c) }

// Name is Name.
func (c *Codec) Name() string { return Name }

// Marshal encodes the two list answers from their items' kept encodings
// (see the package comment: an item is known by its pointer) and anything
// else with the inner codec.
func (c *Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *runtimeapi.ListContainersResponse:
		if m != nil {
			return encodeFrom(c, c.containerEnc, m, m.GetContainers())
		}
	case *runtimeapi.ListPodSandboxResponse:
		if m != nil {
			return encodeFrom(c, c.sandboxEnc, m, m.GetItems())
		}
	}
	return c.inner.Marshal(v)
}

// encodeFrom encodes m, a list answer of items, through e; an answer
// with an unknown field of its own, or one e does not take, goes to the
// inner codec.
func encodeFrom[T interface {
	comparable
	proto.Message
}](c *Codec, e *encCache[T], m proto.Message, items []T) (mem.BufferSlice, error) {
	if len(m.ProtoReflect().GetUnknown()) == 0 {
		if b, ok, err := e.encode(items); ok || err != nil {
			return b, err
		}
	}
	return c.inner.Marshal(m)
}

// Unmarshal decodes the two list answers through the caches and anything
// else with the inner codec.
func (c *Codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *runtimeapi.ListContainersResponse:
		return decodeInto(c, c.containers, data, m, func(items []*runtimeapi.Container) { m.Containers = items })
	case *runtimeapi.ListPodSandboxResponse:
		return decodeInto(c, c.sandboxes, data, m, func(items []*runtimeapi.PodSandbox) { m.Items = items })
	}
	return c.inner.Unmarshal(data, v)
}

// decodeInto decodes data into m, a list answer, through d, setting its
// items with set; an answer d does not take goes to the inner codec.
func decodeInto[T proto.Message](c *Codec, d *cache[T], data mem.BufferSlice, m proto.Message, set func([]T)) error {
	items, ok := d.decode(data)
	if !ok {
		return c.inner.Unmarshal(data, m)
	}
	proto.Reset(m)
	set(items)
	return nil
}

// Stats counts what the caches did since the codec was made.
type Stats struct {
	Decoded, Reused int // items decoded, items taken from the cache
	Kept            int // items kept now, both kinds

	Encoded, EncodingsReused int // items encoded, and sent with a kept encoding
	EncodingsKept            int // encodings kept now, both kinds
}

// Stats reports the caches' counts.
func (c *Codec) Stats() Stats {
	a, b := c.containers.stats(), c.sandboxes.stats()
	x, y := c.containerEnc.stats(), c.sandboxEnc.stats()
	return Stats{Decoded: a.Decoded + b.Decoded, Reused: a.Reused + b.Reused, Kept: a.Kept + b.Kept,
		Encoded: x.Encoded + y.Encoded, EncodingsReused: x.EncodingsReused + y.EncodingsReused,
		EncodingsKept: x.EncodingsKept + y.EncodingsKept}
}

// encCache keeps the encodings of items of one kind by pointer.
type encCache[T interface {
	comparable
	proto.Message
}] struct {
	now func() time.Time

	mu        sync.Mutex
	items     map[T]*encoded
	lastSweep time.Time
	counts    Stats
	scratch   [][]byte
}

type encoded struct {
	b    []byte
	seen time.Time
}

func newEncCache[T interface {
	comparable
	proto.Message
}](now func() time.Time) *encCache[T] {
	return &encCache[T]{now: now, items: map[T]*encoded{}, lastSweep: now()}
}

// encode encodes an answer whose only field is the list items, each from
// its kept encoding or encoded now and kept. ok is false (nothing done)
// for a list holding a nil item, which the inner codec judges.
func (e *encCache[T]) encode(items []T) (data mem.BufferSlice, ok bool, err error) {
	var zero T
	if slices.Contains(items, zero) {
		return nil, false, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	encs := e.scratch[:0]
	size := 0
	for _, it := range items {
		enc, hit := e.items[it]
		if hit {
			e.counts.EncodingsReused++
		} else {
			b, err := proto.Marshal(it)
			if err != nil {
				return nil, false, err
			}
			e.counts.Encoded++
			if len(e.items) >= Limit {
				clear(e.items)
			}
			enc = &encoded{b: b}
			e.items[it] = enc
		}
		enc.seen = now
		encs = append(encs, enc.b)
		size += protowire.SizeTag(1) + protowire.SizeBytes(len(enc.b))
	}
	buf := make([]byte, 0, size)
	for _, b := range encs {
		buf = protowire.AppendTag(buf, 1, protowire.BytesType)
		buf = protowire.AppendBytes(buf, b)
	}
	clear(encs)
	e.scratch = encs[:0]
	if now.Sub(e.lastSweep) >= Retention/10 {
		e.lastSweep = now
		maps.DeleteFunc(e.items, func(_ T, enc *encoded) bool { return now.Sub(enc.seen) > Retention })
	}
	return mem.BufferSlice{mem.SliceBuffer(buf)}, true, nil
}

func (e *encCache[T]) stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.counts
	s.EncodingsKept = len(e.items)
	return s
}

// cache keeps decoded items of one kind by their encoding.
type cache[T proto.Message] struct {
	now   func() time.Time
	newT  func() T
	shape *shape

	mu        sync.Mutex
	items     map[string]*entry[T]
	lastSweep time.Time
	counts    Stats
	key       []byte // scratch for the canonical encoding
}

type entry[T proto.Message] struct {
	msg  T
	seen time.Time
}

func newCache[T proto.Message](now func() time.Time, newT func() T) *cache[T] {
	return &cache[T]{now: now, newT: newT, shape: shapeOf(newT().ProtoReflect().Descriptor(), map[protoreflect.FullName]*shape{}), items: map[string]*entry[T]{}, lastSweep: now()}
}

// decode reads an answer whose only field is field 1, a repeated message
// (both list answers). ok is false, with nothing kept, for an answer with
// any other field or one that does not decode: the caller decodes it in
// full, and fails as it would have without this cache.
func (c *cache[T]) decode(data mem.BufferSlice) (items []T, ok bool) {
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	type fresh struct {
		key string
		msg T
	}
	var decoded []fresh // kept only once the whole answer has decoded
	var hits []*entry[T]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return nil, false // nothing is kept or counted before the loop ends
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return nil, false
		}
		b = b[n+m:]
		key, cacheable, wellFormed := canonical(c.key[:0], v, c.shape)
		c.key = key
		if !wellFormed {
			return nil, false
		}
		if e, hit := c.items[string(key)]; hit && cacheable {
			hits = append(hits, e)
			items = append(items, e.msg)
			continue
		}
		msg := c.newT()
		if err := proto.Unmarshal(v, msg); err != nil {
			return nil, false
		}
		if cacheable {
			decoded = append(decoded, fresh{string(key), msg})
		}
		items = append(items, msg)
	}
	for _, e := range hits {
		e.seen = now
	}
	c.counts.Reused += len(hits)
	c.counts.Decoded += len(items) - len(hits)
	for _, f := range decoded {
		if len(c.items) >= Limit {
			clear(c.items)
		}
		c.items[f.key] = &entry[T]{msg: f.msg, seen: now}
	}
	if now.Sub(c.lastSweep) >= Retention/10 {
		c.lastSweep = now
		maps.DeleteFunc(c.items, func(_ string, e *entry[T]) bool { return now.Sub(e.seen) > Retention })
	}
	return items, true
}

// canonical appends to out the encoding b of a message of shape sh with
// the entries of each map in a fixed order: gRPC's encoders write a
// map's entries in Go's random map order, so the same item comes in
// different bytes from one answer to the next. Nested messages are made
// canonical too; every other field stays as it came, in its place. The
// result is as long as b. cacheable is false for a map holding one key
// twice (its last entry wins, and ordering would change which one is
// last); wellFormed is false for bytes that are not a protobuf encoding.
func canonical(out, b []byte, sh *shape) (key []byte, cacheable, wellFormed bool) {
	cacheable = true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out, false, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return out, false, false
		}
		if typ != protowire.BytesType {
			out = append(out, b[:n+m]...)
			b = b[n+m:]
			continue
		}
		if entry, isMap := sh.maps[num]; isMap {
			// This map's run of entries from here, sorted.
			var arr [16][]byte
			run := arr[:0]
			for len(b) > 0 {
				num2, typ2, n2 := protowire.ConsumeTag(b)
				if n2 < 0 || num2 != num || typ2 != protowire.BytesType {
					break
				}
				v, m2 := protowire.ConsumeBytes(b[n2:])
				if m2 < 0 {
					return out, false, false
				}
				if entry != nil { // a map of messages: its values made canonical, on their own
					var ok, wf bool
					if v, ok, wf = canonical(nil, v, entry); !wf {
						return out, false, false
					}
					cacheable = cacheable && ok
				} else if !wellFormedEntry(v) {
					return out, false, false
				}
				run = append(run, v)
				b = b[n2+m2:]
			}
			slices.SortFunc(run, bytes.Compare)
			var prevKey []byte
			for i, e := range run {
				k := mapKey(e)
				if i > 0 && bytes.Equal(prevKey, k) {
					cacheable = false
				}
				prevKey = k
				out = protowire.AppendTag(out, num, protowire.BytesType)
				out = protowire.AppendBytes(out, e)
			}
			continue
		}
		if nested := sh.msgs[num]; nested != nil {
			v, _ := protowire.ConsumeBytes(b[n:])
			out = append(out, b[:n+m-len(v)]...) // tag and length, unchanged
			var ok, wf bool
			if out, ok, wf = canonical(out, v, nested); !wf {
				return out, false, false
			}
			cacheable = cacheable && ok
		} else {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out, cacheable, true
}

// wellFormedEntry reports whether a map entry of scalar key and value is
// a protobuf encoding.
func wellFormedEntry(e []byte) bool {
	for len(e) > 0 {
		num, typ, n := protowire.ConsumeTag(e)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, e[n:])
		if m < 0 {
			return false
		}
		e = e[n+m:]
	}
	return true
}

// shape is what canonical needs of a message's descriptor: its map fields
// (with the shape of their entries when the values are messages, nil
// otherwise) and its other message fields.
type shape struct {
	maps map[protowire.Number]*shape
	msgs map[protowire.Number]*shape
}

// shapeOf builds md's shape; seen breaks the cycles of recursive messages.
func shapeOf(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*shape) *shape {
	if sh, ok := seen[md.FullName()]; ok {
		return sh
	}
	sh := &shape{maps: map[protowire.Number]*shape{}, msgs: map[protowire.Number]*shape{}}
	seen[md.FullName()] = sh
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			var entry *shape
			if v := fd.MapValue(); v.Message() != nil {
				entry = &shape{maps: map[protowire.Number]*shape{}, msgs: map[protowire.Number]*shape{2: shapeOf(v.Message(), seen)}}
			}
			sh.maps[fd.Number()] = entry
		case fd.Message() != nil && fd.Kind() == protoreflect.MessageKind:
			sh.msgs[fd.Number()] = shapeOf(fd.Message(), seen)
		}
	}
	return sh
}

// mapKey is the key field (1) of a map entry's encoding, wherever it is
// in the entry; nil if it has none (the empty key). The entry is well
// formed.
func mapKey(entry []byte) []byte {
	var key []byte
	for len(entry) > 0 {
		num, typ, n := protowire.ConsumeTag(entry)
		m := protowire.ConsumeFieldValue(num, typ, entry[n:])
		if num == 1 {
			key = entry[:n+m]
		}
		entry = entry[n+m:]
	}
	return key
}

func (c *cache[T]) stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.counts
	s.Kept = len(c.items)
	return s
}
