package spec

import (
	"errors"
	"strings"
	"testing"
)

func TestKubeKeys(t *testing.T) {
	s, err := Parse("x.toml", []byte("[deploy]\ntransport = \"grpc\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k := s.Deploy.Kube; k.Generators != DefaultKubeGenerators || k.Namespace != "" || k.Image != "" || k.NodeSelector != nil {
		t.Errorf("defaults: %+v", k)
	}
	src := `[deploy]
deployer = "kube"
sidecar = "istio"
mtls = true
[deploy.replicas]
hop2 = 3
[deploy.resources.hop2]
cpu = 64
[deploy.kube]
context = "lab"
namespace = "s2-run"
image = "registry.example/svclab:v1"
generators = 4
[deploy.kube.node_selector]
"kubernetes.io/hostname" = "vm2"
`
	s, err = Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	k := s.Deploy.Kube
	if k.Context != "lab" || k.Namespace != "s2-run" || k.Image != "registry.example/svclab:v1" || k.Generators != 4 || k.NodeSelector["kubernetes.io/hostname"] != "vm2" {
		t.Errorf("written: %+v", k)
	}
	// Istio keeps the default proxy mode, and allows replicas (its
	// sidecars balance each request); a cluster's cores are not this
	// machine's.
	if s.Deploy.Sidecar != SidecarIstio || s.Deploy.ProxyMode != ProxyModeSidecar || s.Deploy.Resources["hop2"].CPU != 64 {
		t.Errorf("sidecar %q mode %q cpu %g", s.Deploy.Sidecar, s.Deploy.ProxyMode, s.Deploy.Resources["hop2"].CPU)
	}
}

func TestKubeErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"istio on local", "[deploy]\n\nsidecar = \"istio\"\n", `x.toml:3: deploy.sidecar: sidecar "istio" runs only on a Kubernetes cluster: set deploy.deployer = "kube"`},
		{"istio on netns", "[deploy]\ndeployer = \"netns\"\nsidecar = \"istio\"\n", `x.toml:3: deploy.sidecar: sidecar "istio" runs only on a Kubernetes cluster`},
		{"istio inproc", "[deploy]\ndeployer = \"kube\"\ntransport = \"inproc\"\nsidecar = \"istio\"\n", `x.toml:4: deploy.sidecar: sidecar "istio" needs a network transport`},
		{"istio factor on local", "[deploy]\n[experiment.factors]\n\"deploy.sidecar\" = [\"none\", \"istio\"]\n", `x.toml:3: deploy.sidecar: sidecar "istio" runs only on a Kubernetes cluster`},
		{"namespace", "[deploy.kube]\nnamespace = \"Lab_1\"\n", `x.toml:2: deploy.kube.namespace: not a Kubernetes namespace name "Lab_1"`},
		{"generators", "[deploy.kube]\n\ngenerators = 0\n", `x.toml:3: deploy.kube.generators: must be a number of load pods from 1 to 1000, got 0`},
		{"generators type", "[deploy.kube]\ngenerators = \"4\"\n", `x.toml:2: deploy.kube.generators: must be a whole number`},
		{"image", "[deploy.kube]\nimage = \" \"\n", `x.toml:2: deploy.kube.image: must name an image`},
		{"selector key", "[deploy.kube.node_selector]\n\"bad key!\" = \"a\"\n", `x.toml:2: deploy.kube.node_selector."bad key!": not a Kubernetes label key`},
		{"selector value", "[deploy.kube.node_selector]\nzone = \"a b\"\n", `x.toml:2: deploy.kube.node_selector.zone: not a Kubernetes label value "a b"`},
		{"unknown key", "[deploy.kube]\nnamespaces = \"x\"\n", `x.toml:2: deploy.kube.namespaces: unknown key (did you mean "namespace"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.toml", []byte(tt.src))
			if err == nil && s.Experiment.Factors != nil {
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
