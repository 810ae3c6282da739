package handler

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Header is one request header of an httpGet action.
type Header struct {
	Name, Value string
}

// HTTPGet is the GET of an httpGet action.
type HTTPGet struct {
	// Scheme is "https" in any case, or anything else for "http".
	Scheme string
	// Host and Port are where the request goes.
	Host string
	Port int32
	// Path is the request's path and query; "/" is added in front when
	// missing.
	Path string
	// Headers are added in order; a "Host" header (any case) sets the
	// request's host instead.
	Headers []Header
	// UserAgent is the User-Agent header; a User-Agent in Headers is
	// added beside it.
	UserAgent string
	// FollowSameHostRedirects follows a redirect to the same host, up to
	// 10 (the kubelet's probes); otherwise a redirect is the answer (its
	// 3xx status: the kubelet's hooks).
	FollowSameHostRedirects bool
	// HTTPFallback retries over plain HTTP an HTTPS request the server
	// answered in plain HTTP (the kubelet's hooks).
	HTTPFallback bool
	// MaxBody is how much of the response body is read (and discarded)
	// before it is closed; 0 reads none.
	MaxBody int64
}

// URL is the request's URL, as the kubelet forms it.
func (g HTTPGet) URL() *url.URL {
	scheme := "http"
	if strings.EqualFold(g.Scheme, "https") {
		scheme = "https"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(g.Host, strconv.Itoa(int(g.Port)))}
	if pu, err := url.Parse(path); err == nil {
		u.Path, u.RawPath, u.RawQuery = pu.Path, pu.RawPath, pu.RawQuery
	} else {
		u.Path = path
	}
	return u
}

// Get issues the request and returns the status code of the response; an
// error is a request that got no response (refused, timed out by ctx, a
// TLS failure, too many redirects).
func (g HTTPGet) Get(ctx context.Context) (int, error) {
	u := g.URL()
	code, err := g.get(ctx, u)
	if g.HTTPFallback && u.Scheme == "https" && err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		plain := *u
		plain.Scheme = "http"
		code, err = g.get(ctx, &plain)
	}
	return code, err
}

func (g HTTPGet) get(ctx context.Context, u *url.URL) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", g.UserAgent)
	for _, h := range g.Headers {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{
		// The kubelet verifies no certificate of a probe or a hook.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, //nolint:gosec // as the kubelet
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if !g.FollowSameHostRedirects || r.URL.Hostname() != req.URL.Hostname() || len(via) >= 10 {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if g.MaxBody > 0 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, g.MaxBody))
	}
	return resp.StatusCode, nil
}

// Succeeded reports whether an httpGet action's status code is a
// success: 200 to 399.
func Succeeded(code int) bool { return code >= 200 && code < 400 }

// TCPConnect opens and closes a TCP connection to host:port: a tcpSocket
// action. timeout bounds the connect (0: only ctx).
func TCPConnect(ctx context.Context, host string, port int32, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	_ = c.Close()
	return nil
}

// HeadersOf converts the API's headers (anything with GetName and
// GetValue, such as syncpodv1.HTTPHeader) to Headers.
func HeadersOf[H interface {
	GetName() string
	GetValue() string
}](hs []H) []Header {
	out := make([]Header, 0, len(hs))
	for _, h := range hs {
		out = append(out, Header{Name: h.GetName(), Value: h.GetValue()})
	}
	return out
}
