package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// TLSFiles are the certificate files of a service or a client.
type TLSFiles struct {
	// CertFile and KeyFile are this side's certificate (PEM) and its
	// private key.
	CertFile, KeyFile string
	// CAFile holds the CA certificates (PEM) the other side's certificate
	// must chain to.
	CAFile string
}

// Set says whether any file is named.
func (f TLSFiles) Set() bool { return f.CertFile != "" || f.KeyFile != "" || f.CAFile != "" }

// Check says which of the three files are missing when some are named.
func (f TLSFiles) Check(certFlag, keyFlag, caFlag string) error {
	if !f.Set() {
		return nil
	}
	var errs []error
	for _, p := range []struct{ flag, v string }{{certFlag, f.CertFile}, {keyFlag, f.KeyFile}, {caFlag, f.CAFile}} {
		if p.v == "" {
			errs = append(errs, fmt.Errorf("%s: required with %s, %s and %s (mutual TLS)", p.flag, certFlag, keyFlag, caFlag))
		}
	}
	return errors.Join(errs...)
}

// load reads f: a TLS 1.2 or later configuration presenting its
// certificate, and the pool of its CA for the caller to trust.
func (f TLSFiles) load() (*tls.Config, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %s, key %s: %w", f.CertFile, f.KeyFile, err)
	}
	pemCA, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return nil, nil, fmt.Errorf("%s: no PEM certificate in it", f.CAFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, pool, nil
}

// ServerTLS is the configuration of a listener that asks every client for
// a certificate signed by f.CAFile and refuses the handshake without one.
func ServerTLS(f TLSFiles) (*tls.Config, error) {
	c, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, pool
	return c, nil
}

// ClientTLS is the configuration of a client that presents f's
// certificate and checks the server's against f.CAFile.
func ClientTLS(f TLSFiles) (*tls.Config, error) {
	c, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	c.RootCAs = pool
	return c, nil
}

// DialPolicy says how a client reaches a service address.
type DialPolicy struct {
	// TLS is the client's certificate and the CA of the servers; when
	// set, TCP addresses are dialled with mutual TLS.
	TLS TLSFiles
	// InsecureTCP allows plaintext TCP when TLS is not set.
	InsecureTCP bool
}

// Dial makes a lazy gRPC client connection to addr: unix sockets in
// plaintext (the socket's file mode is the access control), TCP with
// mutual TLS, or plaintext TCP only when InsecureTCP says so.
func (d DialPolicy) Dial(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	creds, target, err := d.Credentials(addr)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, opts...)...)
}

// Credentials are the transport credentials and the gRPC target for addr
// (see Dial).
func (d DialPolicy) Credentials(addr string) (credentials.TransportCredentials, string, error) {
	network, address, err := SplitAddress(addr)
	if err != nil {
		return nil, "", err
	}
	if network == "unix" {
		return insecure.NewCredentials(), "unix://" + address, nil
	}
	target := "passthrough:///" + address
	switch {
	case d.TLS.Set():
		cfg, err := ClientTLS(d.TLS)
		if err != nil {
			return nil, "", err
		}
		return credentials.NewTLS(cfg), target, nil
	case d.InsecureTCP:
		return insecure.NewCredentials(), target, nil
	}
	return nil, "", fmt.Errorf("%s is a TCP address: give a client certificate, key and CA for mutual TLS, or allow plaintext explicitly with --insecure-tcp", addr)
}
