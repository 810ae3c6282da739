package service

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards a unix socket to another one and can be cut (listener
// and every connection closed, as if the runtime died) and restored. The
// PLEG under test talks to the proxy, so cutting it simulates a stopped
// containerd without stopping the containerd other tests share.
type proxy struct {
	t      *testing.T
	path   string
	target string
	mu     sync.Mutex
	lis    net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, path, target string) *proxy {
	p := &proxy{t: t, path: path, target: target, conns: map[net.Conn]struct{}{}}
	p.restore()
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

func (p *proxy) restore() {
	lis, err := net.Listen("unix", p.path)
	if err != nil {
		p.t.Fatalf("proxy listen: %v", err)
	}
	p.mu.Lock()
	p.lis = lis
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(up, c); up.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lis != nil {
		p.lis.Close()
		p.lis = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}
