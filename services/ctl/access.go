package ctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"sigs.k8s.io/yaml"

	"github.com/syncpod/syncpod/services/server/access"
)

// Access: how syncpodctl reaches a node. Unix sockets (the default) need
// nothing; TCP needs mutual TLS (a CA, a client certificate and its key)
// or an explicit --insecure-tcp. A config file holds these per context,
// as a kubeconfig does; `syncpodctl certs` makes a CA, the node's
// certificate and clients' for users without a PKI.

// accessFlags are the global flags of access; the command line wins over
// SYNCPOD_* variables, which win over the config file's context.
var accessFlags = []string{"certificate-authority", "client-certificate", "client-key", "insecure-tcp"}

// Config is syncpodctl's config file (--config, SYNCPOD_CONFIG, default
// ~/.config/syncpod/config.yaml).
type Config struct {
	// CurrentContext is used when --context is not given.
	CurrentContext string `json:"current-context,omitempty"`
	// Contexts are the nodes and identities syncpodctl knows.
	Contexts []Context `json:"contexts"`
}

// Context is one node and the identity syncpodctl presents to it.
type Context struct {
	Name string `json:"name"`
	// Server, Executor and PLEG are the services' addresses (unix:///path
	// or host:port).
	Server   string `json:"server,omitempty"`
	Executor string `json:"executor,omitempty"`
	PLEG     string `json:"pleg,omitempty"`
	// CertificateAuthority, ClientCertificate and ClientKey are PEM
	// files; relative paths are relative to the config file.
	CertificateAuthority string `json:"certificate-authority,omitempty"`
	ClientCertificate    string `json:"client-certificate,omitempty"`
	ClientKey            string `json:"client-key,omitempty"`
	// InsecureTCP dials TCP addresses in plaintext.
	InsecureTCP bool `json:"insecure-tcp,omitempty"`
}

// defaultConfigPath is ~/.config/syncpod/config.yaml ($XDG_CONFIG_HOME
// when set).
func defaultConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "syncpod", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "syncpod", "config.yaml")
	}
	return ""
}

// applyConfig fills the address and access flags still unset from the
// config file's context. A missing default config file is no error; a
// named one that is missing, or a named context that is not in it, is.
func (g *globals) applyConfig(fs *pflag.FlagSet) error {
	path := g.config
	named := fs.Changed("config") || g.env.Getenv(access.EnvName("config")) != ""
	if path == "" {
		path = defaultConfigPath(g.env.Getenv)
	}
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !named && g.context == "" {
		return nil
	}
	if err != nil {
		return usagef("config: %v", err)
	}
	var cfg Config
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return usagef("config %s: %v", path, err)
	}
	name := g.context
	if name == "" {
		name = cfg.CurrentContext
	}
	if name == "" {
		return nil
	}
	var ctx *Context
	for i := range cfg.Contexts {
		if cfg.Contexts[i].Name == name {
			ctx = &cfg.Contexts[i]
		}
	}
	if ctx == nil {
		return usagef("config %s: no context %q", path, name)
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(path), p)
	}
	for _, v := range []struct {
		flag, value string
	}{
		{"server", ctx.Server}, {"executor", ctx.Executor}, {"pleg", ctx.PLEG},
		{"certificate-authority", rel(ctx.CertificateAuthority)},
		{"client-certificate", rel(ctx.ClientCertificate)},
		{"client-key", rel(ctx.ClientKey)},
	} {
		if v.value != "" && !fs.Changed(v.flag) {
			if err := fs.Set(v.flag, v.value); err != nil {
				return usagef("config %s: context %q: %s: %v", path, name, v.flag, err)
			}
		}
	}
	if ctx.InsecureTCP && !fs.Changed("insecure-tcp") {
		g.insecureTCP = true
	}
	return nil
}

// dialPolicy is how syncpodctl dials: mutual TLS when a client
// certificate is given, plaintext TCP only under --insecure-tcp.
func (g *globals) dialPolicy() access.DialPolicy {
	return access.DialPolicy{
		TLS:         access.TLSFiles{CertFile: g.clientCert, KeyFile: g.clientKey, CAFile: g.ca},
		InsecureTCP: g.insecureTCP,
	}
}

func (g *globals) dial(addr string) (grpc.ClientConnInterface, io.Closer, error) {
	d := g.dialPolicy()
	if err := d.TLS.Check("--client-certificate", "--client-key", "--certificate-authority"); err != nil {
		return nil, nil, usageError{Msg: err.Error()}
	}
	conn, err := d.Dial(addr)
	if err != nil {
		return nil, nil, usagef("%s: %v", addr, err)
	}
	return conn, conn, nil
}

const certsLong = `certs makes a CA and the certificates of a node and its clients, for
users without a PKI: ECDSA P-256, in --dir (an existing ca.crt and ca.key
there are reused, so clients can be added later):

  ca.crt, ca.key          the CA (keep ca.key private)
  node.crt, node.key      the services' serving and peer certificate
                          (O=syncpod:nodes), for --hosts
  admin.crt, admin.key    read, write and exec (O=syncpod:admins)
  editor.crt, editor.key  read and write (O=syncpod:editors)
  viewer.crt, viewer.key  read only (O=syncpod:viewers)
  config.yaml             syncpodctl contexts admin, editor and viewer for
                          --planner-address, --executor-address and
                          --pleg-address

Start each service with --tls-cert-file=node.crt
--tls-private-key-file=node.key --client-ca-file=ca.crt, then
syncpodctl --config DIR/config.yaml get pods.`

func newCerts(g *globals) *cobra.Command {
	var (
		dir, nodeName, planner, executor, pleg string
		hosts                                  []string
		validity                               time.Duration
	)
	cmd := &cobra.Command{
		Use:   "certs --dir DIR [--hosts NAME,...]",
		Short: "Make a CA and certificates for a node and its clients",
		Long:  certsLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usagef("certs: --dir is required")
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			now := g.env.Now()
			ca, err := loadOrMakeCA(dir, validity, now)
			if err != nil {
				return err
			}
			all := append(append([]string{}, hosts...), "localhost", "127.0.0.1", "::1")
			leaves := []struct {
				file string
				req  access.CertRequest
			}{
				{"node", access.CertRequest{CommonName: nodeName, Organizations: []string{access.GroupNodes}, Hosts: all}},
				{"admin", access.CertRequest{CommonName: "admin", Organizations: []string{access.GroupAdmins}}},
				{"editor", access.CertRequest{CommonName: "editor", Organizations: []string{access.GroupEditors}}},
				{"viewer", access.CertRequest{CommonName: "viewer", Organizations: []string{access.GroupViewers}}},
			}
			for _, l := range leaves {
				l.req.Validity = validity
				c, k, err := ca.Issue(l.req, now)
				if err != nil {
					return err
				}
				if err := writeFiles(dir, map[string][]byte{l.file + ".crt": c, l.file + ".key": k}); err != nil {
					return err
				}
			}
			cfg := Config{CurrentContext: "admin"}
			for _, who := range []string{"admin", "editor", "viewer"} {
				cfg.Contexts = append(cfg.Contexts, Context{
					Name: who, Server: planner, Executor: executor, PLEG: pleg,
					CertificateAuthority: "ca.crt", ClientCertificate: who + ".crt", ClientKey: who + ".key",
				})
			}
			data, err := yaml.Marshal(cfg)
			if err != nil {
				return err
			}
			if err := writeFiles(dir, map[string][]byte{"config.yaml": data}); err != nil {
				return err
			}
			fmt.Fprintf(g.env.Stdout, "wrote ca, node (%s), admin, editor and viewer certificates and config.yaml to %s\n", strings.Join(all, ", "), dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory of the files (created with mode 0700)")
	f.StringSliceVar(&hosts, "hosts", nil, "DNS names and IP addresses of the node's services, besides localhost, 127.0.0.1 and ::1")
	f.StringVar(&nodeName, "node-name", "syncpod-node", "common name of the node's certificate")
	f.StringVar(&planner, "planner-address", "127.0.0.1:7001", "planner address written to config.yaml")
	f.StringVar(&executor, "executor-address", "127.0.0.1:7002", "executor address written to config.yaml")
	f.StringVar(&pleg, "pleg-address", "127.0.0.1:7003", "PLEG address written to config.yaml")
	f.DurationVar(&validity, "validity", 365*24*time.Hour, "how long the certificates are valid")
	return cmd
}

func loadOrMakeCA(dir string, validity time.Duration, now time.Time) (*access.CA, error) {
	certPEM, errC := os.ReadFile(filepath.Join(dir, "ca.crt"))
	keyPEM, errK := os.ReadFile(filepath.Join(dir, "ca.key"))
	if errC == nil && errK == nil {
		return access.LoadCA(certPEM, keyPEM)
	}
	ca, err := access.NewCA("syncpod-ca", validity, now)
	if err != nil {
		return nil, err
	}
	c, k, err := ca.PEM()
	if err != nil {
		return nil, err
	}
	return ca, writeFiles(dir, map[string][]byte{"ca.crt": c, "ca.key": k})
}

// writeFiles writes each file: keys with mode 0600, the rest 0644.
func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".key") {
			mode = 0o600
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, mode); err != nil {
			return err
		}
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
	}
	return nil
}
