package crilog

import (
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func TestParser(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string // stream:content, "+" suffix for partial
	}{
		{"full lines", []string{"2026-11-21T12:00:00.000000001Z stdout F hello", "2026-11-21T12:00:00.000000002Z stderr F oops"}, []string{"out:hello", "err:oops"}},
		{"partial parts are joined", []string{"2026-11-21T12:00:00Z stdout P hel", "2026-11-21T12:00:01Z stdout P l", "2026-11-21T12:00:02Z stdout F o"}, []string{"out:hello"}},
		{"streams join separately", []string{"2026-11-21T12:00:00Z stdout P a", "2026-11-21T12:00:01Z stderr F b", "2026-11-21T12:00:02Z stdout F c"}, []string{"err:b", "out:ac"}},
		{"empty full line", []string{"2026-11-21T12:00:00Z stdout F "}, []string{"out:"}},
		{"empty line without trailing space", []string{"2026-11-21T12:00:00Z stdout F"}, []string{"out:"}},
		{"tags after the type", []string{"2026-11-21T12:00:00Z stdout P:x a", "2026-11-21T12:00:00Z stdout F:x b"}, []string{"out:ab"}},
		{"content keeps its spaces", []string{"2026-11-21T12:00:00Z stdout F  two  spaces "}, []string{"out: two  spaces "}},
		{"not the CRI format passes through", []string{"garbage here"}, []string{"out:garbage here"}},
		{"unfinished partial is flushed as partial", []string{"2026-11-21T12:00:00Z stdout P abc"}, []string{"out:abc+"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Parser
			var got []string
			show := func(l *syncpodv1.LogLine) {
				s := map[syncpodv1.LogStream]string{syncpodv1.LogStream_LOG_STREAM_STDOUT: "out", syncpodv1.LogStream_LOG_STREAM_STDERR: "err"}[l.GetStream()] + ":" + string(l.GetContent())
				if l.GetPartial() {
					s += "+"
				}
				got = append(got, s)
			}
			for _, raw := range tc.lines {
				if l, ok := p.Feed([]byte(raw)); ok {
					show(l)
				}
			}
			for _, l := range p.Flush() {
				show(l)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzParser(f *testing.F) {
	f.Add([]byte("2026-11-21T12:00:00Z stdout P a\n2026-11-21T12:00:00Z stdout F b\n"))
	f.Add([]byte("x y z\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Parser
		for _, line := range strings.Split(string(data), "\n") {
			if l, ok := p.Feed([]byte(line)); ok && l == nil {
				t.Fatal("a completed line is nil")
			}
		}
		for _, l := range p.Flush() {
			if !l.GetPartial() {
				t.Fatal("a flushed line is not marked partial")
			}
		}
	})
}
