package node

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/syncpod/syncpod/node/logquery"
	"github.com/syncpod/syncpod/node/nodestats"
	"github.com/syncpod/syncpod/planner/plannerclient"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ReadAPIOptions configure the kubelet read API. Planner and Logger are
// required.
type ReadAPIOptions struct {
	// Planner carries logs, exec, attach and port-forward to the
	// executor, as syncpodctl's do.
	Planner plannerv1.PlannerServiceClient
	// Pods lists the pods bound to the node (for /pods); nil serves an
	// empty list.
	Pods func() ([]*corev1.Pod, error)
	// StaticName maps a mirror pod's name to its static pod's name in
	// the planner (false when name is no mirror pod's).
	StaticName func(namespace, name string) (string, bool)
	// MirrorName maps a static pod's name in the planner to its mirror
	// pod's (false when name is no static pod's), for the pods' stats.
	MirrorName func(namespace, name string) (string, bool)
	// NodeName is the node's name in the Summary API.
	NodeName string
	// NodeStats reads the node's own CPU, memory and filesystem for
	// /metrics/resource and /stats/summary (default: the host's
	// /sys/fs/cgroup and /proc/meminfo, no filesystem).
	NodeStats *nodestats.Reader
	// AuthorizedUsers are the client certificate common names or
	// organisations allowed in; empty allows every certificate the
	// client CA verified.
	AuthorizedUsers []string
	// StreamIdleTimeout ends an exec, attach or port-forward session idle
	// this long (default 4 h, the kubelet's).
	StreamIdleTimeout time.Duration
	// Logger receives the API's logs.
	Logger *slog.Logger
	// Now is the clock (default time.Now), for sinceSeconds.
	Now func() time.Time
}

// readAPI is the kubelet's read API on the node agent's TLS port: what
// the API server reaches for kubectl logs, exec, attach and port-forward.
type readAPI struct {
	o     ReadAPIOptions
	descs resourceDescs
}

// NewReadAPI is the handler of the kubelet's read API: /containerLogs,
// /exec, /attach, /portForward, /pods, /metrics/resource, /stats/summary
// and /healthz, with the kubelet's
// paths and query parameters. Every path but /healthz needs a client
// certificate verified by the server's client CA (401 without one) whose
// user is authorized (403 otherwise). Streams use the Kubernetes streaming
// protocols (SPDY and WebSocket) of k8s.io/cri-streaming, the kubelet's.
func NewReadAPI(o ReadAPIOptions) (http.Handler, error) {
	if o.Planner == nil || o.Logger == nil {
		return nil, errors.New("node: read API needs Planner and Logger")
	}
	if o.StreamIdleTimeout <= 0 {
		o.StreamIdleTimeout = 4 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NodeStats == nil {
		o.NodeStats = &nodestats.Reader{}
	}
	a := &readAPI{o: o, descs: newResourceDescs()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.Handle("GET /pods", a.auth(http.HandlerFunc(a.servePods)))
	mux.Handle("GET /metrics/resource", a.auth(http.HandlerFunc(a.serveResourceMetrics)))
	mux.Handle("GET /stats/summary", a.auth(http.HandlerFunc(a.serveSummary)))
	mux.Handle("GET /containerLogs/{ns}/{pod}/{container}", a.auth(http.HandlerFunc(a.serveLogs)))
	for _, p := range []string{"/exec/{ns}/{pod}/{container}", "/exec/{ns}/{pod}/{uid}/{container}"} {
		mux.Handle(p, a.auth(http.HandlerFunc(a.serveExec)))
	}
	for _, p := range []string{"/attach/{ns}/{pod}/{container}", "/attach/{ns}/{pod}/{uid}/{container}"} {
		mux.Handle(p, a.auth(http.HandlerFunc(a.serveAttach)))
	}
	for _, p := range []string{"/portForward/{ns}/{pod}", "/portForward/{ns}/{pod}/{uid}"} {
		mux.Handle(p, a.auth(http.HandlerFunc(a.servePortForward)))
	}
	return mux, nil
}

// ReadAPITLS is the TLS configuration of the read API: the serving
// certificate and key files, and the CA whose client certificates are
// accepted (the API server's --kubelet-client-certificate is signed by it).
func ReadAPITLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("client CA %s: no certificate in it", clientCAFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		// Unauthenticated callers get a 401 from the handler, not a
		// failed handshake (and /healthz stays open).
		ClientAuth: tls.VerifyClientCertIfGiven,
		MinVersion: tls.VersionTLS12,
	}, nil
}

// ServeReadAPI serves h over TLS on lis until ctx ends.
func ServeReadAPI(ctx context.Context, lis net.Listener, cfg *tls.Config, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, TLSConfig: cfg,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(lis, "", "") }()
	log.Info("kubelet read API listening", "address", lis.Addr().String())
	select {
	case <-ctx.Done():
		// Streams (logs -f, exec) are hijacked or long: close, not drain.
		_ = srv.Close()
		<-errc
		return nil
	case err := <-errc:
		return err
	}
}

// auth admits requests with a verified client certificate of an
// authorized user.
func (a *readAPI) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		subj := r.TLS.VerifiedChains[0][0].Subject
		if !authorized(a.o.AuthorizedUsers, subj.CommonName, subj.Organization) {
			a.o.Logger.Warn("read API request refused", "user", subj.CommonName, "groups", subj.Organization, "path", r.URL.Path)
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)", subj.CommonName, r.Method), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized says whether user (or one of its groups) is in allowed; an
// empty allowed admits everyone.
func authorized(allowed []string, user string, groups []string) bool {
	if len(allowed) == 0 || slices.Contains(allowed, user) {
		return true
	}
	for _, g := range groups {
		if slices.Contains(allowed, g) {
			return true
		}
	}
	return false
}

// httpStatus maps a planner error to the HTTP status of the read API.
func httpStatus(err error) int {
	switch status.Code(err) {
	case codes.NotFound:
		return http.StatusNotFound
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.FailedPrecondition:
		return http.StatusConflict
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unimplemented:
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}

func writeErr(w http.ResponseWriter, err error) {
	msg := err.Error()
	if s, ok := status.FromError(err); ok {
		msg = s.Message()
	}
	http.Error(w, msg, httpStatus(err))
}

// ref is the planner's reference of the pod the API names: a mirror pod
// stands for its static pod (whose uid differs from the mirror's).
func (a *readAPI) ref(ctx context.Context, ns, name, uid string) (*plannerv1.PodRef, *plannerv1.PodRecord, error) {
	ref := &plannerv1.PodRef{Namespace: ns, Name: name, Uid: uid}
	resp, err := a.o.Planner.GetPod(ctx, &plannerv1.GetPodRequest{Pod: ref})
	if status.Code(err) == codes.NotFound && a.o.StaticName != nil {
		if static, ok := a.o.StaticName(ns, name); ok {
			ref = &plannerv1.PodRef{Namespace: ns, Name: static}
			resp, err = a.o.Planner.GetPod(ctx, &plannerv1.GetPodRequest{Pod: ref})
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return ref, resp.GetRecord(), nil
}

func (a *readAPI) servePods(w http.ResponseWriter, _ *http.Request) {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	if a.o.Pods != nil {
		pods, err := a.o.Pods()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		for _, p := range pods {
			list.Items = append(list.Items, *p)
		}
	}
	slices.SortFunc(list.Items, func(x, y corev1.Pod) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// logRequest is the planner's request for a /containerLogs query, and
// what the answer's writer needs of it.
func logRequest(q logquery.Query) (*plannerv1.ContainerLogsRequest, syncpodv1.LogStream) {
	req := &plannerv1.ContainerLogsRequest{Follow: q.Follow, Previous: q.Previous, TailLines: q.TailLines}
	if q.SinceTime != nil {
		req.SinceTime = timestamppb.New(*q.SinceTime)
	}
	stream := syncpodv1.LogStream_LOG_STREAM_UNSPECIFIED
	switch q.Stream {
	case logquery.Stdout:
		stream = syncpodv1.LogStream_LOG_STREAM_STDOUT
	case logquery.Stderr:
		stream = syncpodv1.LogStream_LOG_STREAM_STDERR
	}
	return req, stream
}

// logWriter writes log lines as the kubelet does: the content and a
// newline (none after a partial last line), the RFC 3339 time first with
// timestamps, at most limit bytes in all.
type logWriter struct {
	w          io.Writer
	timestamps bool
	stream     syncpodv1.LogStream
	left       int64 // bytes still allowed; < 0: no limit
}

// write writes l; false once the byte limit is reached.
func (lw *logWriter) write(l *syncpodv1.LogLine) (bool, error) {
	if lw.stream != syncpodv1.LogStream_LOG_STREAM_UNSPECIFIED && l.GetStream() != lw.stream {
		return true, nil
	}
	var b []byte
	if lw.timestamps && l.GetTime() != nil {
		b = l.GetTime().AsTime().UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, ' ')
	}
	b = append(b, l.GetContent()...)
	if !l.GetPartial() {
		b = append(b, '\n')
	}
	if lw.left >= 0 && int64(len(b)) >= lw.left {
		_, err := lw.w.Write(b[:lw.left])
		lw.left = 0
		return false, err
	}
	if lw.left >= 0 {
		lw.left -= int64(len(b))
	}
	_, err := lw.w.Write(b)
	return true, err
}

func (a *readAPI) serveLogs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lq, err := logquery.Parse(r.URL.Query(), a.o.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ref, rec, err := a.ref(ctx, r.PathValue("ns"), r.PathValue("pod"), "")
	if err != nil {
		writeErr(w, err)
		return
	}
	container := r.PathValue("container")
	if !hasContainer(rec.GetPod(), container) {
		http.Error(w, fmt.Sprintf("container %q is not valid for pod %q", container, r.PathValue("pod")), http.StatusBadRequest)
		return
	}
	req, logStream := logRequest(lq)
	req.Pod, req.Container = ref, container
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := a.o.Planner.ContainerLogs(ctx, req)
	if err != nil {
		writeErr(w, err)
		return
	}
	lw := &logWriter{w: w, timestamps: lq.Timestamps, stream: logStream, left: -1}
	if lq.LimitBytes > 0 {
		lw.left = lq.LimitBytes
	}
	flusher, _ := w.(http.Flusher)
	wrote := false
	start := func() {
		if !wrote {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			wrote = true
		}
	}
	if req.Follow {
		// A follower sees the answer at once, lines or not.
		start()
		if flusher != nil {
			flusher.Flush()
		}
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			start()
			return
		}
		if err != nil {
			if !wrote {
				writeErr(w, err)
			} else if ctx.Err() == nil {
				a.o.Logger.Warn("container log stream broke", "pod", ref.GetName(), "container", container, "err", err)
			}
			return
		}
		start()
		for _, l := range msg.GetLines() {
			more, err := lw.write(l)
			if err != nil {
				return
			}
			if !more {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func hasContainer(p *syncpodv1.Pod, name string) bool {
	for _, c := range p.GetSpec().GetContainers() {
		if c.GetName() == name {
			return true
		}
	}
	for _, c := range p.GetSpec().GetInitContainers() {
		if c.GetName() == name {
			return true
		}
	}
	for _, c := range p.GetSpec().GetEphemeralContainers() {
		if c.GetName() == name {
			return true
		}
	}
	return false
}

// streamTarget carries the streaming library's exec, attach and
// port-forward calls to the planner, for pods of one namespace.
type streamTarget struct {
	a  *readAPI
	ns string
}

func (a *readAPI) serveExec(w http.ResponseWriter, r *http.Request) {
	type execOptions struct {
		*remotecommandserver.Options
		cmd []string
	}
	serveStream(a, w, r, func(r *http.Request) (execOptions, error) {
		opts, err := remotecommandserver.NewOptions(r)
		if err != nil {
			return execOptions{}, err
		}
		cmd := r.URL.Query()["command"]
		if len(cmd) == 0 {
			return execOptions{}, errors.New("command: required")
		}
		return execOptions{opts, cmd}, nil
	}, func(opts execOptions, ref *plannerv1.PodRef, t streamTarget) {
		remotecommandserver.ServeExec(w, r, t, ref.GetName(), ref.GetUid(), r.PathValue("container"), opts.cmd,
			opts.Options, a.o.StreamIdleTimeout, remotecommandserver.DefaultStreamCreationTimeout, remotecommandserver.SupportedStreamingProtocols)
	})
}

// serveStream answers a streaming request (exec, attach, port-forward):
// parse reads its options (400 when they are bad), the pod it names is
// resolved, and serve carries its streams to the planner through t.
func serveStream[O any](a *readAPI, w http.ResponseWriter, r *http.Request, parse func(*http.Request) (O, error), serve func(opts O, ref *plannerv1.PodRef, t streamTarget)) {
	opts, err := parse(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ref, _, err := a.ref(r.Context(), r.PathValue("ns"), r.PathValue("pod"), r.PathValue("uid"))
	if err != nil {
		writeErr(w, err)
		return
	}
	serve(opts, ref, streamTarget{a: a, ns: ref.GetNamespace()})
}

func (a *readAPI) serveAttach(w http.ResponseWriter, r *http.Request) {
	serveStream(a, w, r, remotecommandserver.NewOptions, func(opts *remotecommandserver.Options, ref *plannerv1.PodRef, t streamTarget) {
		remotecommandserver.ServeAttach(w, r, t, ref.GetName(), ref.GetUid(), r.PathValue("container"),
			opts, a.o.StreamIdleTimeout, remotecommandserver.DefaultStreamCreationTimeout, remotecommandserver.SupportedStreamingProtocols)
	})
}

func (a *readAPI) servePortForward(w http.ResponseWriter, r *http.Request) {
	serveStream(a, w, r, portforward.NewV4Options, func(opts *portforward.V4Options, ref *plannerv1.PodRef, t streamTarget) {
		portforward.ServePortForward(w, r, t, ref.GetName(), ref.GetUid(), opts,
			a.o.StreamIdleTimeout, remotecommandserver.DefaultStreamCreationTimeout, portforward.SupportedProtocols)
	})
}

// session is an exec or attach stream of the planner.
type session struct {
	send func(*syncpodv1.StreamInput) error // safe for concurrent use
	recv func() (*syncpodv1.StreamOutput, error)
}

// newSession takes over an opened planner session; with no input (in
// nil) it tells the planner so at once.
func newSession(ps *plannerclient.Session, in io.Reader) *session {
	if in == nil {
		_ = ps.CloseSend()
	}
	return &session{send: ps.Send, recv: ps.Recv}
}

func (s *session) input(in *syncpodv1.StreamInput) error {
	return s.send(in)
}

// run copies in and resize to the session and its output to out and errw
// until the session ends; the exit code it reports is returned (0 when it
// reports none).
func (s *session) run(ctx context.Context, in io.Reader, out, errw io.Writer, resize <-chan remotecommandserver.TerminalSize) (int32, error) {
	if in != nil {
		go plannerclient.SendStdin(in, s.input)
	}
	if resize != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sz, ok := <-resize:
					if !ok {
						return
					}
					if s.input(&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Resize{Resize: &syncpodv1.TerminalSize{Width: uint32(sz.Width), Height: uint32(sz.Height)}}}) != nil {
						return
					}
				}
			}
		}()
	}
	for {
		o, err := s.recv()
		if errors.Is(err, io.EOF) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		switch v := o.GetOutput().(type) {
		case *syncpodv1.StreamOutput_Stdout:
			if out != nil {
				if _, err := out.Write(v.Stdout); err != nil {
					return 0, err
				}
			}
		case *syncpodv1.StreamOutput_Stderr:
			w := errw
			if w == nil {
				w = out
			}
			if w != nil {
				if _, err := w.Write(v.Stderr); err != nil {
					return 0, err
				}
			}
		case *syncpodv1.StreamOutput_ExitCode:
			return v.ExitCode, nil
		}
	}
}

// ExecInContainer runs cmd through the planner's Exec; a non-zero exit
// code is a utilexec.CodeExitError, which the streaming library reports
// to the client as the command's exit code.
func (t streamTarget) ExecInContainer(ctx context.Context, name, uid, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize, _ time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ps, err := plannerclient.Exec(ctx, t.a.o.Planner, &plannerv1.ExecStart{
		Pod: &plannerv1.PodRef{Namespace: t.ns, Name: name, Uid: uid}, Container: container, Command: cmd, Stdin: in != nil, Tty: tty,
	})
	if err != nil {
		return err
	}
	code, err := newSession(ps, in).run(ctx, in, out, errw, resize)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: int(code)}
	}
	return nil
}

// AttachContainer attaches through the planner's Attach.
func (t streamTarget) AttachContainer(ctx context.Context, name, uid, container string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ps, err := plannerclient.Attach(ctx, t.a.o.Planner, &plannerv1.AttachStart{
		Pod: &plannerv1.PodRef{Namespace: t.ns, Name: name, Uid: uid}, Container: container, Stdin: in != nil, Tty: tty,
	})
	if err != nil {
		return err
	}
	_, err = newSession(ps, in).run(ctx, in, out, errw, resize)
	return err
}

// PortForward carries one forwarded connection through the planner's
// PortForward.
func (t streamTarget) PortForward(ctx context.Context, name, uid string, port int32, conn io.ReadWriteCloser) error {
	return plannerclient.PortForward(ctx, t.a.o.Planner, &plannerv1.PodRef{Namespace: t.ns, Name: name, Uid: uid}, port, conn)
}
