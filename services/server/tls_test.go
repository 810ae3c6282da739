package server

import (
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"
)

// handshake dials the TLS listener at addr with cfg and reports the
// handshake's outcome, as either side saw it. The server's verdict
// arrives on serverErr.
func handshake(t *testing.T, addr string, cfg *tls.Config, serverErr <-chan error) error {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err == nil {
		// TLS 1.3: a refused client certificate shows on the first read;
		// an accepted one reads the server's byte.
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if serr := <-serverErr; serr != nil && err == nil {
		err = serr
	}
	return err
}

// serveTLS accepts on a loopback TLS listener with cfg, completing each
// handshake and then writing one byte.
func serveTLS(t *testing.T, cfg *tls.Config) (string, <-chan error) {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	errs := make(chan error, 16)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			err = c.(*tls.Conn).Handshake()
			errs <- err
			if err == nil {
				_, _ = c.Write([]byte{1})
			}
			c.Close()
		}
	}()
	return lis.Addr().String(), errs
}

// replace writes src's files over dst's, as a renewal does: a new file
// renamed into place.
func replace(t *testing.T, dst, src TLSFiles) {
	t.Helper()
	for _, p := range [][2]string{{src.CertFile, dst.CertFile}, {src.KeyFile, dst.KeyFile}, {src.CAFile, dst.CAFile}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1]+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p[1]+".new", p[1]); err != nil {
			t.Fatal(err)
		}
	}
}

// A service and a client whose certificates and CA are renewed in place
// use the new ones at their next handshake, without a restart; callers
// of the old CA are refused from then on; a client checks the server's
// certificate against its CA and the address it dialled.
func TestRenewedCertificatesAreUsedWithoutARestart(t *testing.T) {
	oldCA, newCA := newPKI(t, "old-ca"), newPKI(t, "new-ca")
	server := oldCA.issue(t, "node", []string{GroupNodes}, "127.0.0.1")
	client := oldCA.issue(t, "admin", []string{GroupAdmins})
	serverCfg, err := ServerTLS(server, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, serverErr := serveTLS(t, serverCfg)
	clientCfg, err := ClientTLS(client, "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, addr, clientCfg, serverErr); err != nil {
		t.Fatalf("before the renewal: %v", err)
	}
	// A client that trusts another CA refuses the server (its own
	// certificate is one the server accepts).
	strangerCfg, err := ClientTLS(TLSFiles{CertFile: client.CertFile, KeyFile: client.KeyFile, CAFile: newCA.write(t, "other-ca.crt", mustRead(t, newCA.issue(t, "x", nil).CAFile))}, "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, addr, strangerCfg, serverErr); err == nil {
		t.Fatal("a client of another CA accepted the server's certificate")
	}
	// A client that dialled another name than the certificate's refuses
	// it too.
	otherHost, err := ClientTLS(client, "127.0.0.2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, addr, otherHost, serverErr); err == nil {
		t.Fatal("a certificate for 127.0.0.1 was accepted for 127.0.0.2")
	}

	// The renewal: both sides' files now hold the new CA's certificates.
	before := oldCA.issue(t, "admin-before", []string{GroupAdmins})
	staticOld, err := ClientTLS(before, "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	replace(t, server, newCA.issue(t, "node-renewed", []string{GroupNodes}, "127.0.0.1"))
	replace(t, client, newCA.issue(t, "admin-renewed", []string{GroupAdmins}))
	time.Sleep(time.Second + 100*time.Millisecond) // the files are looked at once a second at most
	if err := handshake(t, addr, clientCfg, serverErr); err != nil {
		t.Fatalf("after the renewal, the same configurations: %v", err)
	}
	// The old CA's certificates are refused now: its files were not
	// touched, but the server trusts the new CA only, and their client
	// the old one.
	if err := handshake(t, addr, staticOld, serverErr); err == nil {
		t.Fatal("after the renewal, a client of the old CA got in")
	}

	// A renewal caught half-written keeps the last good pair.
	if err := os.WriteFile(server.CertFile, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second + 100*time.Millisecond)
	if err := handshake(t, addr, clientCfg, serverErr); err != nil {
		t.Fatalf("with a broken certificate file: %v, want the last good one used", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
