// Package chunkio copies a reader onto a message stream in chunks: a
// session's stdin and a forwarded connection's bytes on their way in.
package chunkio

import "io"

// Size is the most bytes one chunk holds.
const Size = 32 << 10

// Pump reads r until it ends and gives send each chunk read, a copy send
// may keep. It returns false as soon as send fails (the stream is gone),
// and true once r has ended (io.EOF or any other error), for the caller
// to tell the stream so.
func Pump(r io.Reader, send func([]byte) error) bool {
	buf := make([]byte, Size)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if send(append([]byte(nil), buf[:n]...)) != nil {
				return false
			}
		}
		if err != nil {
			return true
		}
	}
}
