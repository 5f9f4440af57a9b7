package sidecar

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
)

func init() { register(haproxy{}) }

// haproxy renders a haproxy.cfg: one frontend and one backend per
// listener, in http mode (HTTP/2 both sides for gRPC) or tcp mode.
type haproxy struct{}

func (haproxy) Name() string       { return "haproxy" }
func (haproxy) ConfigFile() string { return "haproxy.cfg" }

func (haproxy) Binary() (string, error) {
	return findBinary("haproxy", "SVCLAB_HAPROXY", []string{"/usr/sbin/haproxy"},
		"install Debian's haproxy (.ci/run does), or set SVCLAB_HAPROXY")
}

func (haproxy) Args(path string, _ Config) []string {
	// -db: stay in the foreground, one process.
	return []string{"-db", "-f", path}
}

func (haproxy) CheckArgs(path string, _ Config) []string { return []string{"-c", "-q", "-f", path} }

func (haproxy) Render(c Config) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("global")
	p("  nbthread %d", max(1, c.Threads))
	p("  maxconn 8192")
	// HAProxy sets SO_REUSEPORT by default: a second proxy given a port
	// this one holds would share it and take half its calls, not fail.
	p("  noreuseport")
	p("  log stderr format raw local0 warning")
	if hasOutbound(c) {
		sock, err := haproxySocket(c)
		if err != nil {
			return nil, err
		}
		// The runtime API, through which Update moves servers in and out
		// of an outbound backend's slots while the proxy runs.
		p("  stats socket %s mode 600 level admin", sock)
	}
	p("defaults")
	p("  log global")
	if c.Protocol == TCP {
		p("  mode tcp")
	} else {
		p("  mode http")
		p("  option http-keep-alive")
		p("  http-reuse always")
	}
	p("  timeout connect 2s")
	// The caller's deadline rules; these only bound a silent peer.
	p("  timeout client 1h")
	p("  timeout server 1h")
	p("  timeout tunnel 1h")
	proto := ""
	if c.Protocol == HTTP2 {
		proto = " proto h2"
	}
	for _, l := range c.Listeners {
		bind, server := proto, proto
		if t := l.TLS; t != nil {
			// HAProxy cannot match a URI SAN: it checks the chain to the
			// run's CA, and outbound the name every leaf carries.
			tls := fmt.Sprintf(" ssl crt %s ca-file %s verify required ssl-min-ver TLSv1.3", t.Bundle, t.CA)
			if a := alpnOf(c.Protocol); a != "" {
				tls += " alpn " + a
			}
			if l.Inbound {
				bind = tls + proto
			} else {
				server = tls + " verifyhost localhost sni str(localhost)" + proto
			}
		}
		p("frontend %s", l.Name)
		p("  bind %s%s", loopback(l.Port), bind)
		p("  default_backend to_%s", l.Name)
		p("backend to_%s", l.Name)
		p("  balance roundrobin")
		if l.Inbound {
			for i, u := range l.Upstreams {
				p("  server s%d %s%s", i, u, server)
			}
			continue
		}
		// Outbound: a fixed count of server slots, the upstreams in the
		// first ones and the rest spare (in maintenance, at an address
		// nothing listens on), which Update fills and empties.
		if len(l.Upstreams) > HAProxySlots {
			return nil, fmt.Errorf("listener %s has %d upstreams, more than the %d server slots a haproxy sidecar's backend has", l.Name, len(l.Upstreams), HAProxySlots)
		}
		for i := range HAProxySlots {
			if i < len(l.Upstreams) {
				p("  server s%d %s%s", i, l.Upstreams[i], server)
			} else {
				p("  server s%d %s disabled%s", i, haproxySpare, server)
			}
		}
	}
	return b.Bytes(), nil
}

func splitHostPort(hostport string) (string, int) {
	host, port, _ := net.SplitHostPort(hostport)
	n, _ := strconv.Atoi(port)
	return host, n
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
