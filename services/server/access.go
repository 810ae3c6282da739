package server

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/syncpod/syncpod/services/server/access"
)

// The access package holds what clients share with the servers; these
// names keep the servers' side of it here.

// TLSFiles are the certificate files of a service or a client.
type TLSFiles = access.TLSFiles

// DialPolicy says how a client reaches a service address.
type DialPolicy = access.DialPolicy

// CA is a certificate authority made for a node by syncpodctl certs.
type CA = access.CA

// CertRequest says what certificate to issue.
type CertRequest = access.CertRequest

// ServerTLS is access.ServerTLS: a listener that asks every client for a
// certificate signed by f.CAFile.
func ServerTLS(f TLSFiles, logger *slog.Logger, nextProtos ...string) (*tls.Config, error) {
	return access.ServerTLS(f, logger, nextProtos...)
}

// ClientTLS is access.ClientTLS: a client presenting f's certificate.
func ClientTLS(f TLSFiles, host string, logger *slog.Logger) (*tls.Config, error) {
	return access.ClientTLS(f, host, logger)
}

// NewCA is access.NewCA.
func NewCA(commonName string, validity time.Duration, now time.Time) (*CA, error) {
	return access.NewCA(commonName, validity, now)
}

// LoadCA is access.LoadCA.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) { return access.LoadCA(certPEM, keyPEM) }
