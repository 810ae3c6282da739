// Package access is how a client reaches a syncpod service, apart from
// the server machinery: the build version, the SYNCPOD_* variable of a
// flag, the default unix sockets, service addresses, the mutual TLS files
// and dial policy, and the small PKI of syncpodctl certs. It imports no
// metrics, no HTTP server and no gRPC server, so a command line that only
// dials (syncpodctl) starts without their package initialisation; the
// server package builds on it.
package access
