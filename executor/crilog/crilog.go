// Package crilog reads the log files CRI runtimes write: one physical line
// "<RFC3339Nano time> <stdout|stderr> <P|F>[:tags] <content>" per write,
// a long line split into partial (P) parts ended by a full (F) one.
package crilog

import (
	"bytes"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Parser turns the physical lines of a CRI log file
// ("<RFC3339Nano time> <stdout|stderr> <P|F>[:tags] <content>") into log
// lines, joining the partial (P) parts of a line, per stream, until its
// full (F) part.
type Parser struct {
	partial [3]*syncpodv1.LogLine // by stream
}

// Feed parses one physical line (without its newline). It returns the
// completed line, if this physical line completed one.
func (p *Parser) Feed(raw []byte) (*syncpodv1.LogLine, bool) {
	ts, rest, ok1 := bytes.Cut(raw, []byte{' '})
	streamName, rest, ok2 := bytes.Cut(rest, []byte{' '})
	tag, content, ok3 := bytes.Cut(rest, []byte{' '})
	if !ok3 && ok2 {
		// "<time> <stream> F" with empty content has no trailing space.
		tag, content, ok3 = rest, nil, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	stream := map[string]syncpodv1.LogStream{"stdout": syncpodv1.LogStream_LOG_STREAM_STDOUT, "stderr": syncpodv1.LogStream_LOG_STREAM_STDERR}[string(streamName)]
	if !ok1 || !ok2 || !ok3 || err != nil || stream == syncpodv1.LogStream_LOG_STREAM_UNSPECIFIED {
		// Not the CRI format: pass the line through as it is, rather
		// than lose it.
		return &syncpodv1.LogLine{Stream: syncpodv1.LogStream_LOG_STREAM_STDOUT, Content: bytes.Clone(raw)}, true
	}
	partial := false
	if first, _, _ := bytes.Cut(tag, []byte{':'}); string(first) == "P" {
		partial = true
	}
	cur := p.partial[stream]
	if cur == nil {
		cur = &syncpodv1.LogLine{Time: timestamppb.New(t), Stream: stream}
	}
	cur.Content = append(cur.Content, content...)
	if partial {
		p.partial[stream] = cur
		return nil, false
	}
	p.partial[stream] = nil
	return cur, true
}

// Flush returns the lines still waiting for their full part, marked
// partial, oldest first.
func (p *Parser) Flush() []*syncpodv1.LogLine {
	var out []*syncpodv1.LogLine
	for i, l := range p.partial {
		if l != nil {
			l.Partial = true
			out = append(out, l)
			p.partial[i] = nil
		}
	}
	if len(out) == 2 && out[1].GetTime().AsTime().Before(out[0].GetTime().AsTime()) {
		out[0], out[1] = out[1], out[0]
	}
	return out
}
