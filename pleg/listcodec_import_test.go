package pleg_test

// The PLEG binary decodes its relists' list answers through listcodec's
// cache (services/cmd/syncpod-pleg imports it), so this package's tests
// and BenchmarkPLEGRelist2000 do too.
import _ "github.com/syncpod/syncpod/cri/listcodec"
