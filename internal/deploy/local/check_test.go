package local_test

import (
	"errors"
	"strings"
	"testing"

	_ "github.com/svclab/svclab/apps/chain"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// TestHostTablesNeedHosts checks that [deploy.hosts], [deploy.link] and
// [deploy.links] are refused by deploy.Resolve with the local deployer,
// which has no hosts to honour them, at the first such table in the file,
// for every way deploy.deployer can come to be "local".
func TestHostTablesNeedHosts(t *testing.T) {
	const head = "[app]\nname = \"chain\"\nhops = 2\n[deploy]\nplacement = \"split\"\n" // 5 lines
	const hosts = "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\n"
	const hostsMsg = `the local deployer runs every group on this machine and has no hosts: set deploy.deployer = "netns"`
	const linksMsg = `the local deployer runs every group on this machine and has no links between hosts: set deploy.deployer = "netns"`
	for _, tc := range []struct {
		name   string
		src    string
		sets   []string
		levels map[string]any // a design point's
		want   string         // the error's start; "" for none
	}{
		{"no host tables", head, nil, nil, ""},
		{"hosts", head + hosts, nil, nil, "x.toml:6: deploy.hosts.vm1: " + hostsMsg},
		{"empty hosts table", head + "[deploy.hosts]\n", nil, nil, "x.toml:6: deploy.hosts: " + hostsMsg},
		{"link", head + "[deploy.link]\nlatency = \"1ms\"\n", nil, nil, "x.toml:6: deploy.link: " + linksMsg},
		{"links", head + "[deploy.links.\"vm1-vm2\"]\nlatency = \"1ms\"\n", nil, nil, "x.toml:6: deploy.links.vm1-vm2: " + linksMsg},
		{"first in the file", head + "[deploy.link]\nlatency = \"1ms\"\n" + hosts, nil, nil, "x.toml:6: deploy.link: " + linksMsg},
		// Invalid for netns too: still the deployer's mistake first, as
		// nothing of the table is read.
		{"invalid link", head + "[deploy.link]\nloss = 2.0\n", nil, nil, "x.toml:6: deploy.link: " + linksMsg},
		{"local written", strings.Replace(head, "[deploy]\n", "[deploy]\ndeployer = \"local\"\n", 1) + hosts, nil, nil,
			"x.toml:7: deploy.hosts.vm1: " + hostsMsg},
		{"local by a flag", strings.Replace(head, "[deploy]\n", "[deploy]\ndeployer = \"netns\"\n", 1) + hosts, []string{"deploy.deployer=local"}, nil,
			"x.toml:7: deploy.hosts.vm1: " + hostsMsg},
		{"link by a flag", head, []string{`deploy.link.latency="1ms"`}, nil,
			`--set deploy.link.latency="1ms": deploy.link.latency: ` + linksMsg},
		{"local by a factor", strings.Replace(head, "[deploy]\n", "[deploy]\ndeployer = \"netns\"\n", 1) + hosts +
			"[experiment.factors]\n\"deploy.deployer\" = [\"netns\", \"local\"]\n", nil, map[string]any{"deploy.deployer": "local"},
			"x.toml:7: deploy.hosts.vm1: " + hostsMsg},
		{"hosts by a factor", head + "[experiment.factors]\n\"deploy.hosts\" = [{}, {vm1 = {groups = [\"hop1\", \"hop2\"]}}]\n", nil,
			map[string]any{"deploy.hosts": map[string]any{"vm1": map[string]any{"groups": []any{"hop1", "hop2"}}}},
			"x.toml:7: deploy.hosts.vm1: " + hostsMsg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("x.toml", []byte(tc.src), tc.sets...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.levels != nil {
				if s, err = s.With(tc.levels); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err = deploy.Resolve(s)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Resolve error\n got %v\nwant %s…", err, tc.want)
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *spec.Error", err)
			}
		})
	}
}
