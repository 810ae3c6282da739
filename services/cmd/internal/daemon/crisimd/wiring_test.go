package crisimd

import (
	"flag"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/cri/listcodec"
	"github.com/syncpod/syncpod/services/server"
)

// The CRI server sends its list answers through a list codec.
func TestTheServerSendsListsThroughTheListCodec(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	opts := serverOptions(server.RegisterFlags(fs, server.Defaults{}), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if _, ok := opts.Codec.(*listcodec.Codec); !ok {
		t.Fatalf("server codec %T, want a *listcodec.Codec", opts.Codec)
	}
}
