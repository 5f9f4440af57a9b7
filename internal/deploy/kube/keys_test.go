package kube

import (
	"errors"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/spec"
)

func TestKeysOf(t *testing.T) {
	s, err := spec.Parse("x.toml", []byte("[deploy]\ntransport = \"grpc\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := KeysOf(s)
	if err != nil || k.Generators != DefaultGenerators || k.Namespace != "" || k.Image != "" || k.NodeSelector != nil {
		t.Errorf("defaults: %+v, %v", k, err)
	}
	src := `[deploy]
deployer = "kube"
sidecar = "istio"
mtls = true
[deploy.kube]
context = "lab"
namespace = "s2-run"
image = "registry.example/svclab:v1"
generators = 4
[deploy.kube.node_selector]
"kubernetes.io/hostname" = "vm2"
[deploy.kube.backing_images]
postgres = "registry.example/postgres:16"
`
	if s, err = spec.Parse("x.toml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	k, err = KeysOf(s)
	if err != nil || k.Context != "lab" || k.Namespace != "s2-run" || k.Image != "registry.example/svclab:v1" || k.Generators != 4 || k.NodeSelector["kubernetes.io/hostname"] != "vm2" || k.BackingImages["postgres"] != "registry.example/postgres:16" {
		t.Errorf("written: %+v, %v", k, err)
	}
}

// TestKeysErrors: [deploy.kube] is checked whatever the deployer (a spec
// that runs locally renders for a cluster), at file, line and key, every
// mistake at once.
func TestKeysErrors(t *testing.T) {
	tests := []struct {
		name, src string
		sets      []string
		want      string
	}{
		{"namespace", "[deploy.kube]\nnamespace = \"Lab_1\"\n", nil, `x.toml:2: deploy.kube.namespace: not a Kubernetes namespace name "Lab_1"`},
		{"generators", "[deploy.kube]\n\ngenerators = 0\n", nil, `x.toml:3: deploy.kube.generators: must be a number of load pods from 1 to 1000, got 0`},
		{"generators type", "[deploy.kube]\ngenerators = \"4\"\n", nil, `x.toml:2: deploy.kube.generators: must be a whole number`},
		{"image", "[deploy.kube]\nimage = \" \"\n", nil, `x.toml:2: deploy.kube.image: must name an image`},
		{"selector key", "[deploy.kube.node_selector]\n\"bad key!\" = \"a\"\n", nil, `x.toml:2: deploy.kube.node_selector."bad key!": not a Kubernetes label key`},
		{"selector value", "[deploy.kube.node_selector]\nzone = \"a b\"\n", nil, `x.toml:2: deploy.kube.node_selector.zone: not a Kubernetes label value "a b"`},
		{"backing kind", "[deploy.kube.backing_images]\nmysql = \"mysql:8\"\n", nil, `x.toml:2: deploy.kube.backing_images.mysql: not a kind of backing service: postgres or redis`},
		{"backing image", "[deploy.kube.backing_images]\npostgres = \"\"\n", nil, `x.toml:2: deploy.kube.backing_images.postgres: must name an image, e.g. "postgres:16"`},
		{"backing image type", "[deploy.kube.backing_images]\nredis = 7\n", nil, `x.toml:2: deploy.kube.backing_images.redis: must be a string, got 7`},
		{"unknown key", "[deploy.kube]\nnamespaces = \"x\"\n", nil, `x.toml:2: deploy.kube.namespaces: unknown key (did you mean "namespace"?)`},
		{"not a table", "[deploy]\nkube = 1\n", nil, `x.toml:2: deploy.kube: must be a table, got 1`},
		{"all at once", "[deploy.kube]\nnamespace = \"Lab_1\"\ngenerators = 0\n", nil,
			"x.toml:2: deploy.kube.namespace: not a Kubernetes namespace name \"Lab_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?') (leave the key out for a fresh svclab-<run> namespace per run)\nx.toml:3: deploy.kube.generators: must be a number of load pods from 1 to 1000, got 0"},
		// A string key given a number by --set says how to quote it.
		{"selector by a flag", "", []string{"deploy.kube.node_selector.vm=1"},
			`--set deploy.kube.node_selector.vm=1: deploy.kube.node_selector.vm: must be a string, got 1; quote it: --set 'deploy.kube.node_selector.vm="1"'`},
		{"dotted selector by a flag", "", []string{`deploy.kube.node_selector."kubernetes.io/hostname"=2.5`},
			`--set deploy.kube.node_selector."kubernetes.io/hostname"=2.5: deploy.kube.node_selector."kubernetes.io/hostname": must be a string, got 2.5; quote it: --set 'deploy.kube.node_selector."kubernetes.io/hostname"="2.5"'`},
		{"namespace by a flag", "", []string{"deploy.kube.namespace=[1]"},
			`--set deploy.kube.namespace=[1]: deploy.kube.namespace: must be a string, got a list`},
		{"selector in the file", "[deploy.kube.node_selector]\nvm = 1\n", nil, `x.toml:2: deploy.kube.node_selector.vm: must be a string, got 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := spec.Parse("x.toml", []byte(tt.src), tt.sets...)
			if err == nil {
				_, err = KeysOf(s)
			}
			// Each line wanted is one error; their order is spec.Errors'.
			for _, want := range strings.Split(tt.want, "\n") {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error\n got %v\nwant it to hold %q", err, want)
				}
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *spec.Error", err)
			}
		})
	}
}

// A factor's level of a node selector is checked at the factor's line.
func TestKeysFactorLevel(t *testing.T) {
	s, err := spec.Parse("x.toml", []byte("[app]\nname = \"chain\"\n[deploy]\ntransport = \"grpc\"\n[experiment.factors]\n'deploy.kube.node_selector.\"kubernetes.io/hostname\"' = [1, 2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.With(map[string]any{s.Experiment.Factors[0].Name: int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = KeysOf(r)
	want := `x.toml:6: deploy.kube.node_selector."kubernetes.io/hostname": must be a string, got 1`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got %v\nwant %s", err, want)
	}
}
