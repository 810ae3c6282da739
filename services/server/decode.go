package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
)

// A request whose bytes do not decode (a string that is not UTF-8, a
// truncated message, nesting past protobuf's depth limit) is the caller's
// fault, so it must come back as InvalidArgument. grpc-go makes every
// codec error Internal and calls the unary handler's decoder before any
// interceptor, so the error cannot be mapped on its way out. Instead the
// server's codec (requestCodec) notes the bad request beside the message
// it decoded into and answers nil; the first interceptor of each chain
// (decodeUnary, decodeStream) finds the note for the message the handler
// received and answers InvalidArgument, naming the field when the bytes
// show which one, before anything else sees the request.

// requestCodec is the server's codec (gRPC's protobuf codec, or one
// passed in Options.Codec) with decode errors of the caller's making held
// back for the interceptors.
type requestCodec struct {
	base encoding.CodecV2
	mu   sync.Mutex
	bad  map[any]error // message -> InvalidArgument status error
}

// newRequestCodec wraps base, a protobuf codec.
func newRequestCodec(base encoding.CodecV2) *requestCodec {
	return &requestCodec{base: base, bad: map[any]error{}}
}

// Name is the proto codec's, so the codec serves application/grpc.
func (c *requestCodec) Name() string { return grpcproto.Name }

// Marshal is the base codec's.
func (c *requestCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

// Unmarshal decodes with the base codec; a protobuf decode error is
// noted for the interceptors and not returned.
func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base.Unmarshal(data, v)
	if err == nil || !errors.Is(err, proto.Error) {
		return err
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	st := decodeStatus(data.Materialize(), m.ProtoReflect().Descriptor(), err)
	c.mu.Lock()
	c.bad[v] = st
	c.mu.Unlock()
	return nil
}

// take returns and forgets the note for v, nil when there is none.
func (c *requestCodec) take(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err, ok := c.bad[v]
	if ok {
		delete(c.bad, v)
	}
	return err
}

// decodeUnary answers InvalidArgument for a request the codec could not
// decode.
func (c *requestCodec) decodeUnary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := c.take(req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// decodeStream does the same for every message a stream receives.
func (c *requestCodec) decodeStream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, &decodeCheckedStream{ServerStream: ss, codec: c})
	}
}

type decodeCheckedStream struct {
	grpc.ServerStream
	codec *requestCodec
}

// RecvMsg fails with the codec's note for m, if any.
func (s *decodeCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.codec.take(m)
}

// decodeStatus is the InvalidArgument status for a request that did not
// decode: with the path of the offending string when that is the problem.
func decodeStatus(b []byte, md protoreflect.MessageDescriptor, err error) error {
	fe := fielderr.FieldError{Message: fmt.Sprintf("the request does not decode as %s: %v", md.FullName(), err)}
	if path := invalidUTF8Path(b, md, 0); path != "" {
		fe = fielderr.FieldError{Path: path, Message: "string field contains invalid UTF-8"}
	}
	return errgrpc.ToGRPC(fielderr.Errors{fe})
}

// maxPathDepth bounds the walk of invalidUTF8Path, as protobuf bounds its
// own recursion.
const maxPathDepth = 100

// invalidUTF8Path walks the wire bytes of a message of type md and returns
// the path of the first string field that is not UTF-8
// ("pod.spec.containers[0].name", `pod.labels["app"]`), or "" when it
// finds none.
func invalidUTF8Path(b []byte, md protoreflect.MessageDescriptor, depth int) string {
	if depth > maxPathDepth {
		return ""
	}
	counts := map[protowire.Number]int{}
	found := ""
	lengthDelimited(b, func(num protowire.Number, v []byte) bool {
		fd := md.Fields().ByNumber(num)
		if fd == nil {
			return true
		}
		name := string(fd.Name())
		if fd.IsList() {
			name += "[" + strconv.Itoa(counts[num]) + "]"
			counts[num]++
		}
		switch {
		case fd.IsMap():
			if p := invalidUTF8InMapEntry(v, fd, depth); p != "" {
				found = name + p
			}
		case fd.Kind() == protoreflect.StringKind:
			if !utf8.Valid(v) {
				found = name
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if p := invalidUTF8Path(v, fd.Message(), depth+1); p != "" {
				if p[0] == '[' {
					found = name + p
				} else {
					found = name + "." + p
				}
			}
		}
		return found == ""
	})
	return found
}

// invalidUTF8InMapEntry looks into one map entry: `["key"]`, `["key"].x`
// or `[key]` when the key itself is the bad string.
func invalidUTF8InMapEntry(b []byte, fd protoreflect.FieldDescriptor, depth int) string {
	key, inValue := "", ""
	keyBad := false
	whole := lengthDelimited(b, func(num protowire.Number, v []byte) bool {
		switch {
		case num == 1 && fd.MapKey().Kind() == protoreflect.StringKind:
			key, keyBad = string(v), !utf8.Valid(v)
		case num == 2 && fd.MapValue().Kind() == protoreflect.StringKind:
			if !utf8.Valid(v) {
				inValue = "value"
			}
		case num == 2 && fd.MapValue().Kind() == protoreflect.MessageKind:
			inValue = invalidUTF8Path(v, fd.MapValue().Message(), depth+1)
		}
		return true
	})
	if !whole {
		return ""
	}
	switch {
	case keyBad:
		return "[key]"
	case inValue == "value":
		return "[" + fielderr.Quote(key) + "]"
	case inValue != "":
		return "[" + fielderr.Quote(key) + "]." + inValue
	}
	return ""
}

// lengthDelimited calls each with the number and bytes of every
// length-delimited field of the encoded message b, in wire order,
// skipping the other fields, until each returns false. It reports false
// when it met a malformed tag or value before that.
func lengthDelimited(b []byte, each func(protowire.Number, []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return false
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if !each(num, v) {
			return true
		}
	}
	return true
}
