package chunkio

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestPumpSendsEveryChunkThenSaysTheReaderEnded(t *testing.T) {
	data := strings.Repeat("x", 2*Size+5)
	var got bytes.Buffer
	var chunks [][]byte
	ended := Pump(strings.NewReader(data), func(b []byte) error {
		chunks = append(chunks, b)
		got.Write(b)
		return nil
	})
	if !ended {
		t.Fatal("Pump = false, want true: the reader ended and every send succeeded")
	}
	if got.String() != data {
		t.Fatalf("sent %d bytes, want the reader's %d", got.Len(), len(data))
	}
	if len(chunks) != 3 {
		t.Fatalf("sent %d chunks, want 3 of at most %d bytes", len(chunks), Size)
	}
	// Each chunk is the sender's to keep: a later read does not overwrite it.
	if &chunks[0][0] == &chunks[1][0] || chunks[0][0] != 'x' {
		t.Fatal("chunks share one buffer")
	}
}

func TestPumpEndsOnAReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errors.New("gone")))
	var got []string
	if !Pump(r, func(b []byte) error { got = append(got, string(b)); return nil }) {
		t.Fatal("Pump = false after a read error, want true")
	}
	if len(got) != 1 || got[0] != "abc" {
		t.Fatalf("sent %q, want the bytes read before the error", got)
	}
}

func TestPumpStopsWhenSendFails(t *testing.T) {
	r := iotest.OneByteReader(strings.NewReader("abc"))
	calls := 0
	if Pump(r, func([]byte) error { calls++; return errors.New("stream closed") }) {
		t.Fatal("Pump = true after a failed send, want false")
	}
	if calls != 1 {
		t.Fatalf("send called %d times, want 1: nothing after a failed send", calls)
	}
}
