package bench

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// The API-server path: a pod created through a kube-apiserver, bound to
// a node by spec.nodeName, until the node reports it Running, as a watch
// sees it. The same pod goes to a kubelet's node and to a syncpod node
// (syncpod-node) of one control plane, one after the other. The client
// is plain HTTP and JSON (what kubectl apply sends and kubectl get -w
// reads), so the benchmark links no client-go.

// WritePKI writes what a loopback control plane needs into dir: ca.crt,
// apiserver.crt and apiserver.key (serving 127.0.0.1 and localhost,
// signed by the CA) and sa.key (the service-account signing key).
func WritePKI(dir string, now time.Time) error { return WriteClusterPKI(dir, now, nil) }

// NodePKI names a node that joins with its own credentials, as a node of a
// real cluster does (the Node authorizer and NodeRestriction admission
// know it by its client certificate).
type NodePKI struct {
	Name string
	IP   net.IP
}

// WriteClusterPKI writes what WritePKI writes, the API server's serving
// certificate also valid for the node's IP, and with a node: node.crt/.key
// (client, CN system:node:NAME in group system:nodes), kubelet.crt/.key
// (the node's read API, serving its IP) and apiserver-kubelet-client.crt
// /.key (the API server's client certificate at that read API).
func WriteClusterPKI(dir string, now time.Time, node *NodePKI) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "syncpod-bench-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	files := map[string]*pem.Block{"ca.crt": {Type: "CERTIFICATE", Bytes: caDER}}
	serial := int64(2)
	issue := func(name string, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		serial++
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(7*24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		files[name+".crt"] = &pem.Block{Type: "CERTIFICATE", Bytes: der}
		files[name+".key"] = &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}
		return nil
	}
	serving := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}
	if node != nil && node.IP != nil {
		serving = append(serving, node.IP)
	}
	if err := issue("apiserver", &x509.Certificate{
		Subject: pkix.Name{CommonName: "kube-apiserver"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: serving,
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}); err != nil {
		return err
	}
	if node != nil {
		if err := issue("node", &x509.Certificate{
			Subject:     pkix.Name{CommonName: "system:node:" + node.Name, Organization: []string{"system:nodes"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}); err != nil {
			return err
		}
		ips := []net.IP{net.ParseIP("127.0.0.1")}
		if node.IP != nil {
			ips = append(ips, node.IP)
		}
		if err := issue("kubelet", &x509.Certificate{
			Subject: pkix.Name{CommonName: node.Name}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses: ips, DNSNames: []string{node.Name},
		}); err != nil {
			return err
		}
		if err := issue("apiserver-kubelet-client", &x509.Certificate{
			Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}); err != nil {
			return err
		}
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	files["sa.key"] = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}
	for name, blk := range files {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(blk), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// APIServer is a minimal client of a kube-apiserver: a bearer token and
// the CA of its serving certificate.
type APIServer struct {
	URL   string
	Token string
	HTTP  *http.Client
}

// NewAPIServer returns a client of the API server at url whose serving
// certificate caFile signed.
func NewAPIServer(url, caFile, token string) (*APIServer, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s: no certificate", caFile)
	}
	return &APIServer{URL: url, Token: token, HTTP: &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}}, nil
}

// do sends a request with body (JSON, or nil) and decodes a 2xx answer
// into out (when not nil).
func (a *APIServer) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &apiError{Code: resp.StatusCode, Body: string(b)}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

type apiError struct {
	Code int
	Body string
}

func (e *apiError) Error() string { return fmt.Sprintf("API server: %d %.300s", e.Code, e.Body) }

func isStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == code
}

// apiNode and apiPod are the few fields of Node and Pod read here.
type apiNode struct {
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

type apiPod struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// EnsureDefaultServiceAccount creates namespace default's ServiceAccount
// (a control plane without kube-controller-manager has none, and pods
// are refused until it exists).
func (a *APIServer) EnsureDefaultServiceAccount(ctx context.Context) error {
	err := a.do(ctx, http.MethodPost, "/api/v1/namespaces/default/serviceaccounts",
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}, nil)
	if isStatus(err, http.StatusConflict) {
		return nil
	}
	return err
}

// WaitNodeReady waits until node's Ready condition is True.
func (a *APIServer) WaitNodeReady(ctx context.Context, node string) error {
	for {
		var n apiNode
		err := a.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(node), nil, &n)
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready: %w (last error %v)", node, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// APIPod is the benchmark's pod: host network, one busybox container
// that ends at SIGTERM, no service-account token (a control plane
// without kube-controller-manager has no kube-root-ca.crt ConfigMap to
// project), bound to node.
func APIPod(name, node, image string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"app": "syncpod-bench"}},
		"spec": map[string]any{
			"nodeName":                      node,
			"hostNetwork":                   true,
			"automountServiceAccountToken":  false,
			"terminationGracePeriodSeconds": 2,
			"containers": []any{map[string]any{
				"name": "main", "image": image, "imagePullPolicy": "IfNotPresent",
				"command": []any{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"},
			}},
		},
	}
}

// watchEvent is one line of a watch: a pod, or (type ERROR) a Status.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// CreateUntilRunning creates pod name on node and returns the time from
// sending the create to the first watch event that shows it Running. The
// watch is opened first, so no event is missed.
func (a *APIServer) CreateUntilRunning(ctx context.Context, name, node, image string) (time.Duration, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// resourceVersion=0: from the watch cache's current state. Without
	// one the API server asks etcd for the newest revision and waits for
	// its pod cache to reach it, which Debian's etcd 3.4 (no progress
	// notifications) leaves at the last pod event: a fresh control plane
	// answers "Too large resource version" until some pod changes.
	req, err := http.NewRequestWithContext(wctx, http.MethodGet, a.URL+"/api/v1/namespaces/default/pods?watch=1&resourceVersion=0&fieldSelector="+
		url.QueryEscape("metadata.name="+name), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, &apiError{Code: resp.StatusCode, Body: string(b)}
	}
	running := make(chan time.Time, 1)
	werr := make(chan error, 1)
	go func() {
		dec := json.NewDecoder(resp.Body)
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				werr <- err
				return
			}
			if ev.Type == "ERROR" {
				werr <- fmt.Errorf("watch error: %s", ev.Object)
				return
			}
			var p apiPod
			if err := json.Unmarshal(ev.Object, &p); err != nil {
				werr <- fmt.Errorf("watch event %s: %w", ev.Type, err)
				return
			}
			if p.Status.Phase == "Running" {
				running <- time.Now()
				return
			}
		}
	}()
	start := time.Now()
	if err := a.do(ctx, http.MethodPost, "/api/v1/namespaces/default/pods", APIPod(name, node, image), nil); err != nil {
		return 0, err
	}
	select {
	case at := <-running:
		return at.Sub(start), nil
	case err := <-werr:
		return 0, fmt.Errorf("watch of %s ended before Running: %w", name, err)
	case <-ctx.Done():
		return 0, fmt.Errorf("%s not Running: %w", name, ctx.Err())
	}
}

// DeleteAndWait deletes pod name with its grace period and waits until
// the node has killed it and removed the object.
func (a *APIServer) DeleteAndWait(ctx context.Context, name string) error {
	path := "/api/v1/namespaces/default/pods/" + url.PathEscape(name)
	if err := a.do(ctx, http.MethodDelete, path, nil, nil); err != nil && !isStatus(err, http.StatusNotFound) {
		return err
	}
	for {
		err := a.do(ctx, http.MethodGet, path, nil, nil)
		if isStatus(err, http.StatusNotFound) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not removed: %w (last %v)", name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// APISamples are the API-server path's measures of one node.
type APISamples struct {
	// Running is pod created → a watch sees it Running.
	Running Sample
	// Node is the node's share of Running: pod created → its sandbox
	// created in the runtime (the node hears of the pod and asks for a
	// sandbox) plus container started → Running seen (the node sees the
	// start and reports it); empty without a runtime to ask.
	Node Sample
	// Runtime is the rest: sandbox created → container started, in the
	// runtime's own clock.
	Runtime Sample
}

// APINode is a node of the API server measured by MeasureAPIAlternating.
type APINode struct {
	// Name is the node's name (spec.nodeName of its pods).
	Name string
	// Runtime is its runtime, to split each time (nil: not split).
	Runtime *Runtime
}

// MeasureAPIAlternating runs the rounds of MeasureAPIToRunning on two
// nodes of one API server, each round one pod on each, the first node
// first in even rounds and the second in odd ones, so a load that changes
// over the run weighs on both alike. It returns each node's samples and
// the per-round ratios of the second's create → Running to the first's.
func (a *APIServer) MeasureAPIAlternating(ctx context.Context, nodes [2]APINode, image string, warmup, runs int, timeout time.Duration, log *slog.Logger) ([2]APISamples, Sample, error) {
	var out [2]APISamples
	var ratios Sample
	for i := range warmup + runs {
		var d [2]float64
		for j := range 2 {
			k := j
			if i%2 == 1 {
				k = 1 - j
			}
			s, err := a.apiRound(ctx, nodes[k].Runtime, nodes[k].Name, image, i, i < warmup, timeout, log)
			if err != nil {
				return out, ratios, err
			}
			d[k] = s.Running[0]
			if i >= warmup {
				out[k].Running = append(out[k].Running, s.Running...)
				out[k].Node = append(out[k].Node, s.Node...)
				out[k].Runtime = append(out[k].Runtime, s.Runtime...)
			}
		}
		if i >= warmup {
			ratios = append(ratios, d[1]/d[0])
		}
	}
	return out, ratios, nil
}

// MeasureAPIToRunning runs warmup plus runs rounds of CreateUntilRunning
// then DeleteAndWait on node, each bounded by timeout, and returns the
// measured rounds (the warm-up ones are not counted). With rt (the
// node's runtime; nil: none) each round's time is also split into the
// node's share and the runtime's, from the runtime's timestamps.
func (a *APIServer) MeasureAPIToRunning(ctx context.Context, rt *Runtime, node, image string, warmup, runs int, timeout time.Duration, log *slog.Logger) (APISamples, error) {
	var s APISamples
	for i := range warmup + runs {
		r, err := a.apiRound(ctx, rt, node, image, i, i < warmup, timeout, log)
		if err != nil {
			return s, err
		}
		if i >= warmup {
			s.Running = append(s.Running, r.Running...)
			s.Node = append(s.Node, r.Node...)
			s.Runtime = append(s.Runtime, r.Runtime...)
		}
	}
	return s, nil
}

// apiRound is round i on node: a pod created until Running, then deleted
// until gone, bounded by timeout; its one sample of each measure (Node
// and Runtime with rt only).
func (a *APIServer) apiRound(ctx context.Context, rt *Runtime, node, image string, i int, warmup bool, timeout time.Duration, log *slog.Logger) (APISamples, error) {
	var s APISamples
	name := fmt.Sprintf("api-%s-%d", node, i)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	created := time.Now()
	d, err := a.CreateUntilRunning(rctx, name, node, image)
	var st Started
	if err == nil && rt != nil {
		// The container runs: one listing finds it.
		var got map[string]Started
		if got, err = rt.WaitStarted(rctx, []string{name}, nil); err == nil {
			st = got[name]
		}
	}
	if err == nil {
		err = a.DeleteAndWait(rctx, name)
	}
	if err != nil {
		return s, fmt.Errorf("round %d on %s: %w", i, node, err)
	}
	running := created.Add(d)
	s.Running.Add(d)
	if rt != nil {
		s.Node.Add(st.SandboxCreated.Sub(created) + running.Sub(st.Started))
		s.Runtime.Add(st.Started.Sub(st.SandboxCreated))
	}
	// The times, to line up with the runtime's and the agent's logs.
	log.Info("create -> Running", "node", node, "pod", name, "round", i, "warmup", warmup, "seconds", d.Seconds(),
		"created", created.UTC().Format(time.RFC3339Nano), "running", running.UTC().Format(time.RFC3339Nano),
		"sandbox_created", st.SandboxCreated.UTC().Format(time.RFC3339Nano), "container_started", st.Started.UTC().Format(time.RFC3339Nano))
	return s, nil
}
