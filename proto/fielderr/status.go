package fielderr

import (
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
