package fielderr

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounds on what Status puts into a status, so that it always fits in the
// gRPC trailers (clients accept 16 KiB of headers by default).
const (
	// MaxReported is how many field errors a status lists; the message
	// says how many more there were.
	MaxReported = 20
	// MaxMessageLen bounds each field error's path and message in a status.
	MaxMessageLen = 200
)

// Status returns the InvalidArgument status for errs: the message is
// "op: N invalid field(s): path: message; ...", and a google.rpc.BadRequest
// detail carries one field violation per problem. At most MaxReported
// problems are listed, each cut to MaxMessageLen bytes. op may be empty.
func Status(op string, errs Errors) *status.Status {
	shown := errs
	if len(shown) > MaxReported {
		shown = shown[:MaxReported]
	}
	parts := make([]string, 0, len(shown)+1)
	br := &errdetails.BadRequest{}
	for _, fe := range shown {
		path, msg := cut(fe.Path), cut(fe.Message)
		parts = append(parts, FieldError{Path: path, Message: msg}.Error())
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: path, Description: msg})
	}
	if more := len(errs) - len(shown); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	text := fmt.Sprintf("%d invalid field(s): %s", len(errs), strings.Join(parts, "; "))
	if op != "" {
		text = op + ": " + text
	}
	st := status.New(codes.InvalidArgument, text)
	if withDetails, err := st.WithDetails(br); err == nil {
		return withDetails
	}
	return st
}

// cut bounds s to MaxMessageLen bytes at a rune boundary.
func cut(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxMessageLen {
		return s
	}
	n := MaxMessageLen - len("…")
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// StatusOf is the one mapping of the ErrInvalid class to gRPC that every
// service uses: an error carrying field errors becomes Status(op, them),
// one that only matches ErrInvalid becomes Status with a single
// path-less problem (its text), so a client always finds a BadRequest
// detail on InvalidArgument. ok is false for errors of any other class.
func StatusOf(op string, err error) (st *status.Status, ok bool) {
	fields := As(err)
	if len(fields) == 0 {
		if !errors.Is(err, ErrInvalid) {
			return nil, false
		}
		fields = Errors{{Message: err.Error()}}
	}
	return Status(op, fields), true
}

// FromStatus is the client side of Status: the field errors listed in
// st's google.rpc.BadRequest details, in order (Path from the violation's
// field, Message from its description); nil when st carries none. The
// status message may count more problems than are listed (MaxReported).
func FromStatus(st *status.Status) Errors {
	var out Errors
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		for _, v := range br.GetFieldViolations() {
			out = append(out, FieldError{Path: v.GetField(), Message: v.GetDescription()})
		}
	}
	return out
}
