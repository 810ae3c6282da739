package fielderr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/proto/fielderr"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"web", `"web"`},
		{"", `""`},
		{strings.Repeat("a", 64), `"` + strings.Repeat("a", 64) + `"`},
		{strings.Repeat("a", 65), `"` + strings.Repeat("a", 64) + `…" (65 bytes)`},
		{"\xff", `"\xff"`},
		// Cut at a rune boundary: 63 ASCII bytes then a 2-byte rune.
		{strings.Repeat("a", 63) + "é" + "b", `"` + strings.Repeat("a", 63) + `…" (66 bytes)`},
	} {
		if got := fielderr.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestListPrefixAndAs(t *testing.T) {
	var inner fielderr.List
	inner.Add("name", "required")
	inner.Add("[2].id", "bad %d", 7)
	inner.Add("", "required")
	var l fielderr.List
	l.Append("pod", inner.Errors())
	l.Add("actions", "required")
	err := fmt.Errorf("wrapped: %w", l.Err())
	if !errors.Is(err, fielderr.ErrInvalid) {
		t.Fatal("not ErrInvalid")
	}
	var got []string
	for _, fe := range fielderr.As(err) {
		got = append(got, fe.Path)
	}
	if want := "pod.name,pod[2].id,pod,actions"; strings.Join(got, ",") != want {
		t.Fatalf("paths %q, want %s", got, want)
	}
	var empty fielderr.List
	if empty.Err() != nil || fielderr.As(errors.New("x")) != nil {
		t.Fatal("empty list or plain error carries field errors")
	}
}

func TestStatusIsBounded(t *testing.T) {
	var l fielderr.List
	for i := range 10000 {
		l.Add(fmt.Sprintf("spec.containers[%d].name", i), "bad: %s", strings.Repeat("n", 4096)+"\xff")
	}
	st := fielderr.Status("ApplyActions", l.Errors())
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code %v", st.Code())
	}
	if !strings.HasPrefix(st.Message(), "ApplyActions: 10000 invalid field(s): spec.containers[0].name: bad") || !strings.HasSuffix(st.Message(), "and 9980 more") {
		t.Errorf("message %.200s ... %s", st.Message(), st.Message()[len(st.Message())-40:])
	}
	if n := len(st.Proto().String()); n > 16<<10 {
		t.Errorf("status takes %d bytes, over 16 KiB", n)
	}
	var br *errdetails.BadRequest
	for _, d := range st.Details() {
		if b, ok := d.(*errdetails.BadRequest); ok {
			br = b
		}
	}
	if br == nil || len(br.GetFieldViolations()) != fielderr.MaxReported || br.GetFieldViolations()[5].GetField() != "spec.containers[5].name" {
		t.Fatalf("BadRequest detail %v", br)
	}
}

// TestStatusOfAndBack: field errors, a bare ErrInvalid and other errors
// map as every service maps them, and FromStatus reads the field errors
// back on the client side.
func TestStatusOfAndBack(t *testing.T) {
	var l fielderr.List
	l.Add("pod.name", "must not be empty")
	l.Add("pod.spec.containers[1].image", "must not be empty")
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
		want fielderr.Errors
	}{
		{"field errors", fmt.Errorf("apply: %w", l.Err()), true, l.Errors()},
		{"bare ErrInvalid", fmt.Errorf("%w: mode %q", fielderr.ErrInvalid, "x"), true,
			fielderr.Errors{{Message: `invalid argument: mode "x"`}}},
		{"another class", errors.New("disk full"), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := fielderr.StatusOf("Op", tc.err)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "Op: ") {
				t.Errorf("status %v %q", st.Code(), st.Message())
			}
			got := fielderr.FromStatus(st)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("FromStatus %v, want %v", got, tc.want)
			}
		})
	}
	if got := fielderr.FromStatus(status.New(codes.InvalidArgument, "no details")); got != nil {
		t.Errorf("FromStatus of a status without details: %v", got)
	}
}
