package access

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

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

// load reads f: its certificate and key, and the pool of its CA for the
// caller to trust.
func (f TLSFiles) load() (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate %s, key %s: %w", f.CertFile, f.KeyFile, err)
	}
	pemCA, err := os.ReadFile(f.CAFile)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return tls.Certificate{}, nil, fmt.Errorf("%s: no PEM certificate in it", f.CAFile)
	}
	return cert, pool, nil
}

// ServerTLS is the configuration of a listener that asks every client for
// a certificate signed by f.CAFile and refuses the handshake without one.
// The files are read again when they change (see tlsSource): a renewed
// certificate or CA takes effect at the next handshake. nextProtos are the
// ALPN protocols ("h2" for gRPC).
func ServerTLS(f TLSFiles, logger *slog.Logger, nextProtos ...string) (*tls.Config, error) {
	src, err := newTLSSource(f, logger)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: nextProtos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := src.get()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*cert},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    pool,
				NextProtos:   nextProtos,
			}, nil
		},
	}, nil
}

// ServingCertificate is a tls.Config GetCertificate serving f's
// certificate without asking the client for one (f's CA is not used), read
// again when its files change as ServerTLS's.
func ServingCertificate(f TLSFiles, logger *slog.Logger) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	src, err := newTLSSource(f, logger)
	if err != nil {
		return nil, err
	}
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		cert, _ := src.get()
		return cert, nil
	}, nil
}

// ClientTLS is the configuration of a client that presents f's
// certificate and checks the server's, named host (a DNS name or an IP
// address), against f.CAFile. Like ServerTLS it reads the files again when
// they change. The check is VerifyConnection's, against the CA as it is at
// the handshake; the standard one, which could only use the CA read at
// the start, is off.
func ClientTLS(f TLSFiles, host string, logger *slog.Logger) (*tls.Config, error) {
	src, err := newTLSSource(f, logger)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := src.get()
			return cert, nil
		},
		InsecureSkipVerify: true, // verified by VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			_, pool := src.get()
			opts := x509.VerifyOptions{Roots: pool, DNSName: host, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		},
	}, nil
}

// tlsSource is a certificate, its key and a CA pool from files, read
// again at a handshake when one of the files changed (its size, time or
// inode; checked at most once a second), so a certificate renewed in
// place, by a rename or a rewrite, is used without a restart. A reload
// that fails (a half-written file) keeps the last good pair and logs why;
// the next change is tried again.
type tlsSource struct {
	files  TLSFiles
	logger *slog.Logger

	mu      sync.Mutex
	stamps  [3]fileStamp
	checked time.Time
	cert    *tls.Certificate
	pool    *x509.CertPool
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

func (f TLSFiles) stamps() [3]fileStamp {
	return [3]fileStamp{stampOf(f.CertFile), stampOf(f.KeyFile), stampOf(f.CAFile)}
}

func newTLSSource(f TLSFiles, logger *slog.Logger) (*tlsSource, error) {
	stamps := f.stamps()
	cert, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &tlsSource{files: f, logger: logger, stamps: stamps, checked: time.Now(), cert: &cert, pool: pool}, nil
}

// tlsRecheck is how often at most the files are looked at.
const tlsRecheck = time.Second

// get returns the current certificate and CA pool.
func (s *tlsSource) get() (*tls.Certificate, *x509.CertPool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); now.Sub(s.checked) >= tlsRecheck {
		s.checked = now
		if stamps := s.files.stamps(); stamps != s.stamps {
			s.stamps = stamps
			cert, pool, err := s.files.load()
			if err != nil {
				s.logger.Warn("the TLS files changed but cannot be used; keeping the ones loaded before", "err", err)
			} else {
				s.cert, s.pool = &cert, pool
				s.logger.Info("TLS certificate and CA read again after a change", "cert", s.files.CertFile, "ca", s.files.CAFile)
			}
		}
	}
	return s.cert, s.pool
}

// DialPolicy says how a client reaches a service address.
type DialPolicy struct {
	// TLS is the client's certificate and the CA of the servers; when
	// set, TCP addresses are dialled with mutual TLS.
	TLS TLSFiles
	// InsecureTCP allows plaintext TCP when TLS is not set.
	InsecureTCP bool
	// Logger hears of certificate files read again after a change (nil:
	// nothing is logged).
	Logger *slog.Logger
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
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", addr, err)
		}
		cfg, err := ClientTLS(d.TLS, host, d.Logger)
		if err != nil {
			return nil, "", err
		}
		return credentials.NewTLS(cfg), target, nil
	case d.InsecureTCP:
		return insecure.NewCredentials(), target, nil
	}
	return nil, "", fmt.Errorf("%s is a TCP address: give a client certificate, key and CA for mutual TLS, or allow plaintext explicitly with --insecure-tcp", addr)
}
