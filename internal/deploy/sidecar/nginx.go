package sidecar

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

func init() { register(nginx{}) }

// nginx renders an nginx.conf that runs in the foreground as a master and
// one worker: an http block with grpc_pass (HTTP/2) or proxy_pass
// with upstream keep-alive (HTTP/1.1), or a stream block for TCP.
type nginx struct{}

func (nginx) Name() string       { return "nginx" }
func (nginx) ConfigFile() string { return "nginx.conf" }

func (nginx) Binary() (string, error) {
	return findBinary("nginx", "SVCLAB_NGINX", []string{"/usr/sbin/nginx"},
		"install Debian's nginx and libnginx-mod-stream (.ci/run does), or set SVCLAB_NGINX")
}

func (nginx) Args(path string, c Config) []string {
	return []string{"-p", c.Dir, "-c", path, "-e", "stderr"}
}

func (n nginx) CheckArgs(path string, c Config) []string {
	return append([]string{"-t", "-q"}, n.Args(path, c)...)
}

// nginxModules are the dynamic modules Debian builds stream proxying as.
var nginxModules = []string{"/usr/lib/nginx/modules/ngx_stream_module.so"}

func (nginx) Render(c Config) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	if c.Protocol == TCP {
		for _, m := range nginxModules {
			if isFile(m) {
				p("load_module %s;", m)
			}
		}
	}
	p("daemon off;")
	// A master and one worker: a reload (Update) starts a new worker on
	// the new configuration and lets the old one finish its calls, which a
	// lone process cannot do. The master's counters hold the CPU time of
	// the workers it has reaped; a deployer samples the live worker too.
	p("master_process on;")
	p("worker_processes 1;")
	p("pid %s;", filepath.Join(c.Dir, nginxPIDFile))
	p("error_log stderr warn;")
	// Every request in flight to an HTTP/2 upstream holds its own upstream
	// connection (nginx does not multiplex upstream streams), so an overloaded
	// chain needs many.
	p("worker_rlimit_nofile 65536;")
	p("events { worker_connections 30000; }")
	if c.Protocol == TCP {
		p("stream {")
		for _, l := range c.Listeners {
			p("  upstream %s { %s}", l.Name, nginxServers(l.Upstreams))
			switch t := l.TLS; {
			case t == nil:
				p("  server { listen %s; proxy_pass %s; }", loopback(l.Port), l.Name)
			case l.Inbound:
				p("  server { listen %s ssl; %s proxy_pass %s; }", loopback(l.Port), nginxServerTLS(t), l.Name)
			default:
				p("  server { listen %s; proxy_pass %s; %s }", loopback(l.Port), l.Name, nginxUpstreamTLS("proxy", true, t))
			}
		}
		p("}")
		return b.Bytes(), nil
	}
	p("http {")
	p("  access_log off;")
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		p("  %s_temp_path %s;", t, filepath.Join(c.Dir, t))
	}
	p("  client_max_body_size 0;")
	// nginx closes a client connection after 1,000 requests by default
	// (a GOAWAY on HTTP/2, which fails the streams in flight) and an idle
	// upstream one after 60 s; a sidecar keeps its connections.
	p("  keepalive_requests 1000000;")
	p("  keepalive_timeout 1h;")
	// Headers such as grpc-timeout and traceparent pass as they are;
	// underscores too, as a metadata key may have them.
	p("  underscores_in_headers on;")
	for _, l := range c.Listeners {
		p("  upstream %s { %skeepalive 64; keepalive_requests 1000000; keepalive_timeout 1h; }", l.Name, nginxServers(l.Upstreams))
		ssl, serverTLS, scheme, upstreamTLS := "", "", "", ""
		if t := l.TLS; t != nil && l.Inbound {
			ssl, serverTLS = " ssl", "    "+nginxServerTLS(t)
		} else if t != nil {
			scheme = "s"
			upstreamTLS = nginxUpstreamTLS(map[Protocol]string{HTTP1: "proxy", HTTP2: "grpc"}[c.Protocol], false, t)
		}
		if c.Protocol == HTTP2 {
			p("  server {")
			p("    listen %s%s http2;", loopback(l.Port), ssl)
			p("%s", serverTLS)
			p("    http2_max_concurrent_streams 1024;")
			p("    location / { grpc_pass grpc%s://%s; grpc_read_timeout 1h; grpc_send_timeout 1h; grpc_buffer_size 64k; %s }", scheme, l.Name, upstreamTLS)
			p("  }")
			continue
		}
		p("  server {")
		p("    listen %s%s;", loopback(l.Port), ssl)
		p("%s", serverTLS)
		p("    location / {")
		p("      proxy_pass http%s://%s;", scheme, l.Name)
		p("      %s", upstreamTLS)
		p("      proxy_http_version 1.1;")
		// The caller's Host, as Envoy and HAProxy pass it: nginx would
		// send the upstream block's name, whose underscore a Java
		// host's HTTP server refuses (400).
		p("      proxy_set_header Host $http_host;")
		p("      proxy_set_header Connection \"\";")
		p("      proxy_buffering off;")
		p("      proxy_request_buffering off;")
		p("      proxy_read_timeout 1h;")
		p("    }")
		p("  }")
	}
	p("}")
	return b.Bytes(), nil
}

// nginxServerTLS serves TLS 1.3 with t's certificate and demands a client
// certificate from the run's CA. nginx cannot match a URI SAN, so the
// chain is the check.
func nginxServerTLS(t *TLS) string {
	return fmt.Sprintf("ssl_certificate %s; ssl_certificate_key %s; ssl_client_certificate %s; ssl_verify_client on; ssl_verify_depth 2; ssl_protocols TLSv1.3;",
		t.Cert, t.Key, t.CA)
}

// nginxServers are an upstream block's servers, among which nginx
// balances round robin (its default).
func nginxServers(addrs []string) string {
	var b strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&b, "server %s; ", a)
	}
	return b.String()
}

// nginxUpstreamTLS presents t's certificate to the callee's proxy and
// checks the callee's chain and the name localhost. module is the
// directive prefix: proxy (http, stream) or grpc; stream marks the
// stream module.
func nginxUpstreamTLS(module string, stream bool, t *TLS) string {
	var b bytes.Buffer
	if stream {
		b.WriteString("proxy_ssl on; ") // http's and grpc's say it with the scheme
	}
	for _, kv := range [][2]string{
		{"certificate", t.Cert}, {"certificate_key", t.Key}, {"trusted_certificate", t.CA},
		{"verify", "on"}, {"name", "localhost"}, {"server_name", "on"}, {"protocols", "TLSv1.3"}, {"session_reuse", "on"},
	} {
		fmt.Fprintf(&b, "%s_ssl_%s %s; ", module, kv[0], kv[1])
	}
	return b.String()
}
