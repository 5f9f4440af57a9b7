package spec

import (
	"errors"
	"strings"
	"testing"
)

func TestSidecarKeys(t *testing.T) {
	s, err := Parse("x.toml", []byte("[deploy]\ntransport = \"http\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Deploy.Sidecar != SidecarNone || s.Deploy.ProxyMode != ProxyModeSidecar {
		t.Errorf("defaults: sidecar %q, proxy_mode %q; want %q, %q", s.Deploy.Sidecar, s.Deploy.ProxyMode, SidecarNone, ProxyModeSidecar)
	}
	s, err = Parse("x.toml", []byte("[deploy]\nsidecar = \"haproxy\"\nproxy_mode = \"node\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Deploy.Sidecar != SidecarHAProxy || s.Deploy.ProxyMode != ProxyModeNode {
		t.Errorf("written: sidecar %q, proxy_mode %q", s.Deploy.Sidecar, s.Deploy.ProxyMode)
	}
}

// TestSidecarAutoscale: every sidecar kind takes endpoint updates while
// it runs, so each follows an autoscaled group.
func TestSidecarAutoscale(t *testing.T) {
	for _, k := range []string{SidecarEnvoy, SidecarNginx, SidecarHAProxy} {
		s, err := Parse("x.toml", []byte("[deploy]\nsidecar = \""+k+"\"\n[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 50\n"))
		if err != nil {
			t.Fatalf("autoscale with %s sidecars: %v", k, err)
		}
		if _, ok := s.Deploy.Autoscale["hop2"]; !ok || s.Deploy.Sidecar != k {
			t.Errorf("autoscale %v, sidecar %q", s.Deploy.Autoscale, s.Deploy.Sidecar)
		}
	}
}

func TestSidecarErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"near miss", "[deploy]\n\nsidecar = \"envoi\"\n", `x.toml:3: deploy.sidecar: unknown sidecar "envoi" (did you mean "envoy"?)`},
		{"far miss", "[deploy]\nsidecar = \"linkerd2-proxy\"\n", `x.toml:2: deploy.sidecar: unknown sidecar "linkerd2-proxy" (valid: none, envoy, nginx, haproxy, istio)`},
		{"empty", "[deploy]\nsidecar = \"\"\n", `x.toml:2: deploy.sidecar: unknown sidecar ""`},
		{"mode", "[deploy]\nproxy_mode = \"nodes\"\n", `x.toml:2: deploy.proxy_mode: unknown proxy mode "nodes" (did you mean "node"?)`},
		{"inproc", "[deploy]\ntransport = \"inproc\"\nsidecar = \"nginx\"\n", `x.toml:3: deploy.sidecar: sidecar "nginx" needs a network transport`},
		{"autoscale node", "[deploy]\nsidecar = \"envoy\"\nproxy_mode = \"node\"\n[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 50\n", `x.toml:4: deploy.autoscale.hop2: replicas that change while the proxies run need deploy.proxy_mode = "sidecar" (got "node")`},
		{"unix", "[deploy]\nnetwork = \"unix\"\nsidecar = \"envoy\"\n", `x.toml:2: deploy.network: sidecars listen on loopback TCP`},
		{"factor level", "[deploy]\n[experiment.factors]\n\"deploy.sidecar\" = [\"envoy\", \"enovy\"]\n", `x.toml:3: deploy.sidecar: unknown sidecar "enovy" (did you mean "envoy"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.toml", []byte(tt.src))
			if err == nil && s.Experiment.Factors != nil {
				// A factor's levels are checked when they are applied.
				for _, f := range s.Experiment.Factors {
					for _, l := range f.Levels {
						if _, err = s.With(map[string]any{f.Name: l}); err != nil {
							break
						}
					}
				}
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *spec.Error", err)
			}
		})
	}
}
