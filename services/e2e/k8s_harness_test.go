package e2e

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
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/syncpod/syncpod/internal/proctest"
	nodeagent "github.com/syncpod/syncpod/node"
)

// controlPlane is a private Kubernetes control plane on loopback: Debian's
// etcd and a kube-apiserver built from the Go module proxy by
// mk/k8sbin.sh (cached outside the clone), with a CA, serving certificate,
// service-account key and admin token made by the test.
type controlPlane struct {
	t          *testing.T
	bin        string // directory of kube-apiserver and kubectl
	dir        string
	kubeconfig string
	url        string
	client     *nodeagent.Client
	etcd       *bgProc
	apiserver  *bgProc
	// apiserverArgs start kube-apiserver (again, on the same port).
	apiserverArgs []string
	// killedAPIServers are API servers ended with SIGKILL (logs kept).
	killedAPIServers []*bgProc
	// scheduler and controllers run when startControllers was called.
	scheduler, controllers *bgProc
}

// bgProc is a non-syncpod process of the harness, stopped by its pid.
type bgProc struct {
	name string
	cmd  *exec.Cmd
	out  *proctest.Buffer
	done chan struct{}
}

func startBG(t *testing.T, name string, cmd *exec.Cmd) *bgProc {
	t.Helper()
	p := &bgProc{name: name, cmd: cmd, out: &proctest.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p
}

// stop ends the process with SIGTERM (SIGKILL after 20 s).
func (p *bgProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *bgProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// requireK8s says whether a control plane that cannot start fails the
// test (CI, root: make test-setup provides it) rather than skipping it.
func requireK8s() bool { return os.Getenv("SYNCPOD_TEST_REQUIRE_K8S") == "1" }

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if requireK8s() {
		t.Fatalf("Kubernetes control plane required (SYNCPOD_TEST_REQUIRE_K8S=1): %s", msg)
	}
	banner := strings.Repeat("#", 70)
	t.Logf("\n%s\n## SKIP: Kubernetes control plane cannot start: %s\n%s", banner, msg, banner)
	fmt.Fprintf(os.Stderr, "%s\n## %s SKIPPED: Kubernetes control plane cannot start: %s\n%s\n", banner, t.Name(), msg, banner)
	t.SkipNow()
}

// k8sBinaries returns the directory of kube-apiserver and kubectl (and of
// the components named), built once per version by mk/k8sbin.sh (a no-op
// once cached). SYNCPOD_K8S_BIN names a directory that holds them instead.
func k8sBinaries(t *testing.T, more ...string) string {
	t.Helper()
	comps := append([]string{"kube-apiserver", "kubectl"}, more...)
	if d := os.Getenv("SYNCPOD_K8S_BIN"); d != "" {
		for _, c := range comps {
			if _, err := os.Stat(filepath.Join(d, c)); err != nil {
				skipOrFail(t, "SYNCPOD_K8S_BIN=%s: %v", d, err)
			}
		}
		return d
	}
	cmd := exec.Command("../../mk/k8sbin.sh", comps...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		skipOrFail(t, "mk/k8sbin.sh %s: %v\n%s", strings.Join(comps, " "), err, tail(stderr.String(), 20))
	}
	return strings.TrimSpace(string(out))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// etcdBinary finds etcd, installing Debian's etcd-server when missing (as
// root; never starting its service).
func etcdBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	if out, err := exec.Command("../../mk/etcd-deps.sh").CombinedOutput(); err != nil {
		skipOrFail(t, "mk/etcd-deps.sh: %v\n%s", err, out)
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		skipOrFail(t, "etcd is not installed (apt-get install etcd-server, as root)")
	}
	return p
}

// handedOut are the ports freePort gave this test process: the kernel may
// offer a port again once its probe listener is closed, and two tests
// running in parallel must not be handed the same one.
var handedOut sync.Map

// freePort is a loopback port nothing listened on a moment ago. Something
// may still take it before the caller's process binds it (another
// process's outgoing connection, say): starters that cannot bind retry on
// other ports (bindLost).
func freePort(t *testing.T) int {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, taken := handedOut.LoadOrStore(port, true); !taken {
			return port
		}
	}
}

// bindLost says whether p exited because a port it was given had been
// taken in the meantime.
func bindLost(p *bgProc) bool {
	return p.exited() && strings.Contains(p.out.String(), "address already in use")
}

// portAttempts bounds how often a control-plane process is started again
// on other ports after losing one (bindLost).
const portAttempts = 5

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// makePKI writes ca.crt, apiserver.crt/.key (for 127.0.0.1 and
// localhost), sa.key, and for the kubelet read API: kubelet.crt/.key (the
// nodes' serving certificate, for 127.0.0.1), apiserver-kubelet-client.crt
// /.key (the API server's client certificate at the nodes) and
// stranger.crt/.key (signed by the same CA, a user the nodes refuse).
func makePKI(t *testing.T, dir string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "syncpod-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER)
	serial := int64(2)
	issue := func(name string, tmpl *x509.Certificate) {
		t.Helper()
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.SerialNumber = big.NewInt(serial)
		serial++
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
		writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", keyDER)
	}
	issue("apiserver", &x509.Certificate{
		Subject: pkix.Name{CommonName: "kube-apiserver"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	})
	issue("kubelet", &x509.Certificate{
		Subject: pkix.Name{CommonName: "syncpod-node"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(netnsNodeIP)},
	})
	issue("apiserver-kubelet-client", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"kubeadm:cluster-admins"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	issue("stranger", &x509.Certificate{
		Subject: pkix.Name{CommonName: "stranger"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
}

// adminToken is the test client's bearer token (system:masters).
const adminToken = "syncpod-e2e-admin-token"

// startControlPlane starts etcd and kube-apiserver on loopback and waits
// until the API server is ready and namespace default has its
// ServiceAccount and its kube-root-ca.crt ConfigMap. Everything is stopped, by pid, at cleanup.
func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	etcdBin := etcdBinary(t)
	bin := k8sBinaries(t)
	dir := t.TempDir()
	// etcd syncs every write: on tmpfs that costs nothing.
	etcdData := filepath.Join(dir, "etcd")
	if d, err := os.MkdirTemp("/dev/shm", "syncpod-etcd-"); err == nil {
		etcdData = d
		t.Cleanup(func() { _ = os.RemoveAll(d) })
	}
	cp := &controlPlane{t: t, bin: bin, dir: dir}
	t.Cleanup(cp.stop)

	makePKI(t, dir)
	clientURL := cp.startEtcd(etcdBin, etcdData)

	token := adminToken
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	apiserverArgs := func(port int) []string {
		return []string{
			"--etcd-servers=" + clientURL,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
			"--tls-cert-file=" + filepath.Join(dir, "apiserver.crt"),
			"--tls-private-key-file=" + filepath.Join(dir, "apiserver.key"),
			"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-cluster-ip-range=10.0.0.0/24",
			"--authorization-mode=RBAC",
			"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
			// 1.37 refuses a loopback advertise address for the kubernetes
			// Service endpoints: nothing here needs them.
			"--endpoint-reconciler-type=none",
			// kubectl logs and exec go to the nodes' read API: the API
			// server shows its client certificate and checks theirs, and
			// dials the InternalIP (the host name may not be loopback).
			"--kubelet-client-certificate=" + filepath.Join(dir, "apiserver-kubelet-client.crt"),
			"--kubelet-client-key=" + filepath.Join(dir, "apiserver-kubelet-client.key"),
			"--kubelet-certificate-authority=" + filepath.Join(dir, "ca.crt"),
			"--kubelet-preferred-address-types=InternalIP",
			"--enable-priority-and-fairness=false",
			"--profiling=false",
			"--v=1"}
	}
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		cp.url = fmt.Sprintf("https://127.0.0.1:%d", port)
		cp.apiserverArgs = apiserverArgs(port)
		cp.apiserver = startBG(t, "kube-apiserver", exec.Command(filepath.Join(bin, "kube-apiserver"), cp.apiserverArgs...))
		err := cp.ready(token)
		if err == nil {
			break
		}
		if attempt < portAttempts && bindLost(cp.apiserver) {
			t.Logf("kube-apiserver lost its port before it could bind it (attempt %d): starting it on another", attempt)
			continue
		}
		skipOrFail(t, "%v", err)
	}

	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, cp.url, filepath.Join(dir, "ca.crt"), token)
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	if cp.client, err = nodeagent.NewClient(cfg); err != nil {
		t.Fatal(err)
	}

	// No controller-manager: the default ServiceAccount is the test's.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, err := cp.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("creating the default ServiceAccount: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Nor its root CA publisher: the pods' service account token volume
	// projects the cluster's CA from ConfigMap kube-root-ca.crt.
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cp.client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": string(caPEM)}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ConfigMap kube-root-ca.crt: %v", err)
	}
	return cp
}

// ready waits until /readyz answers 200 (etcd reached, post-start hooks
// done); an error says why it did not, with both logs' tails.
func (cp *controlPlane) ready(token string) error {
	caPEM, _ := os.ReadFile(filepath.Join(cp.dir, "ca.crt"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(90 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, cp.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if cp.apiserver.exited() || cp.etcd.exited() || time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready (err %v)\n--- etcd ---\n%s\n--- kube-apiserver ---\n%s",
				err, tail(cp.etcd.out.String(), 20), tail(cp.apiserver.out.String(), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startEtcd starts etcd on two free loopback ports, with its data under
// data, and returns its client URL once /health says it is healthy. When
// etcd lost a port before binding it (bindLost), it is started again on
// others, with fresh data (its membership names the peer URL).
func (cp *controlPlane) startEtcd(bin, data string) string {
	t := cp.t
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	for attempt := 1; ; attempt++ {
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		cp.etcd = startBG(t, "etcd", exec.Command(bin,
			"--name=default", fmt.Sprintf("--data-dir=%s/%d", data, attempt),
			"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=default="+peerURL, "--log-level=warn"))
		for deadline := time.Now().Add(60 * time.Second); !cp.etcd.exited() && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			resp, err := hc.Get(clientURL + "/health")
			if err != nil {
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"health":"true"`) {
				return clientURL
			}
		}
		if attempt < portAttempts && bindLost(cp.etcd) {
			t.Logf("etcd lost a port before it could bind it (attempt %d): starting it on others", attempt)
			continue
		}
		skipOrFail(t, "etcd not healthy on %s:\n%s", clientURL, tail(cp.etcd.out.String(), 20))
	}
}

// restartAPIServer ends kube-apiserver with SIGKILL, runs meanwhile while
// none runs, and starts it again on the same port and etcd.
func (cp *controlPlane) restartAPIServer(meanwhile func()) {
	cp.t.Helper()
	old := cp.apiserver
	_ = old.cmd.Process.Kill()
	<-old.done
	cp.killedAPIServers = append(cp.killedAPIServers, old)
	meanwhile()
	cp.apiserver = startBG(cp.t, "kube-apiserver", exec.Command(filepath.Join(cp.bin, "kube-apiserver"), cp.apiserverArgs...))
	if err := cp.ready(adminToken); err != nil {
		cp.t.Fatal(err)
	}
}

// startControllers starts kube-scheduler and kube-controller-manager
// (built by mk/k8sbin.sh into the same cache) against the control plane,
// as the admin, with no leader election. Neither serves HTTPS
// (--secure-port=0): nothing here reads their health or metrics, and a
// port handed out by freePort could be taken before they bind it (by
// another test binary's connection), and kube-scheduler given a taken
// port exits at once ("failed to create listener"): the likely cause of
// a CI run whose Deployment's pods all stayed Pending. The node lifecycle
// controller checks every 2 s and gives a node 12 s without a lease
// renewal before its Ready condition turns Unknown (NotReady).
func (cp *controlPlane) startControllers() {
	t := cp.t
	t.Helper()
	bin := k8sBinaries(t, "kube-scheduler", "kube-controller-manager")
	cp.scheduler = startBG(t, "kube-scheduler", exec.Command(filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig="+cp.kubeconfig, "--secure-port=0",
		"--leader-elect=false", "--v=1"))
	cp.controllers = startBG(t, "kube-controller-manager", exec.Command(filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+cp.kubeconfig, "--secure-port=0",
		"--leader-elect=false",
		"--service-account-private-key-file="+filepath.Join(cp.dir, "sa.key"),
		"--root-ca-file="+filepath.Join(cp.dir, "ca.crt"),
		"--use-service-account-credentials=false",
		"--node-monitor-period=2s", "--node-monitor-grace-period=12s",
		"--v=1"))
}

// controllersExited says which of the scheduler and the controller
// manager has exited, and how, for a test's failure message.
func (cp *controlPlane) controllersExited() string {
	var out []string
	for _, p := range []*bgProc{cp.scheduler, cp.controllers} {
		if p != nil && p.exited() {
			out = append(out, fmt.Sprintf("%s exited (%v):\n%s", p.name, p.cmd.ProcessState, tail(p.out.String(), 20)))
		}
	}
	if len(out) == 0 {
		return "kube-scheduler and kube-controller-manager are running"
	}
	return strings.Join(out, "\n")
}

func (cp *controlPlane) stop() {
	if cp.t.Failed() {
		for _, p := range append(cp.killedAPIServers, cp.scheduler, cp.controllers, cp.apiserver, cp.etcd) {
			if p != nil {
				cp.t.Logf("---- log of %s ----\n%s", p.name, tail(p.out.String(), 60))
			}
		}
	}
	for _, p := range []*bgProc{cp.scheduler, cp.controllers, cp.apiserver, cp.etcd} {
		if p != nil {
			p.stop()
		}
	}
}

// kubectl runs the built kubectl against the control plane.
func (cp *controlPlane) kubectl(args ...string) (string, error) {
	out, err := kubectlCmd(cp, args...).CombinedOutput()
	return string(out), err
}

// mustKubectl is kubectl failing the test on an error.
func (cp *controlPlane) mustKubectl(args ...string) string {
	cp.t.Helper()
	out, err := cp.kubectl(args...)
	if err != nil {
		cp.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlCmd(cp *controlPlane, args ...string) *exec.Cmd {
	return exec.Command(filepath.Join(cp.bin, "kubectl"), append([]string{"--kubeconfig=" + cp.kubeconfig}, args...)...)
}
