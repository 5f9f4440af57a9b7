package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/apps/chain"
	selectapp "github.com/svclab/svclab/apps/select"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	"github.com/svclab/svclab/internal/spec"
)

func parse(t *testing.T, src string) *spec.Spec {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return s
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name      string
		spec      string
		groups    [][]string
		network   string
		exposed   [][]string // per group
		entryGrp  int
		inProcess bool
	}{
		{
			name:    "monolith is built in",
			spec:    "[app]\nname = \"chain\"\n",
			groups:  [][]string{{"hop1", "hop2", "hop3"}},
			network: "tcp",
			exposed: [][]string{{"hop1"}},
		},
		{
			name:    "split is built in",
			spec:    "[app]\nname = \"chain\"\nhops = 2\n[deploy]\nplacement = \"split\"\nnetwork = \"tcp\"\n",
			groups:  [][]string{{"hop1"}, {"hop2"}},
			network: "tcp",
			exposed: [][]string{{"hop1"}, {"hop2"}},
		},
		{
			name: "named placement; only what is called across groups listens",
			spec: "[app]\nname = \"chain\"\nhops = 4\n[deploy]\ntransport = \"http\"\nplacement = \"two\"\n" +
				"[deploy.placements]\ntwo = [[\"hop3\", \"hop4\"], [\"hop1\", \"hop2\"]]\n",
			groups:   [][]string{{"hop3", "hop4"}, {"hop1", "hop2"}},
			network:  "tcp",
			exposed:  [][]string{{"hop3"}, {"hop1"}},
			entryGrp: 1,
		},
		{
			name:      "inproc has no network and no transport listener",
			spec:      "[app]\nname = \"select\"\n[deploy]\ntransport = \"inproc\"\n",
			groups:    [][]string{{"frontend", "selector"}},
			exposed:   [][]string{nil},
			inProcess: true,
		},
		{
			name:    "a named placement may put the entry last",
			spec:    "[app]\nname = \"rpcops\"\n[deploy]\nplacement = \"entrylast\"\n[deploy.placements]\nentrylast = [[\"ops\"], [\"frontend\"]]\n",
			groups:  [][]string{{"ops"}, {"frontend"}},
			network: "tcp",
			exposed: [][]string{{"ops"}, {"frontend"}},
			// the entry is in the second group
			entryGrp: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := runtime.Resolve(parse(t, tc.spec))
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			var groups [][]string
			for _, g := range p.Groups {
				groups = append(groups, g.Components)
				if g.Name != strings.Join(g.Components, "+") {
					t.Errorf("group name %q", g.Name)
				}
			}
			if !slices.EqualFunc(groups, tc.groups, slices.Equal) {
				t.Errorf("groups %v, want %v", groups, tc.groups)
			}
			if p.Network != tc.network || p.InProcess() != tc.inProcess {
				t.Errorf("network %q in-process %v, want %q %v", p.Network, p.InProcess(), tc.network, tc.inProcess)
			}
			for i := range p.Groups {
				if got := p.Exposed(i); !slices.Equal(got, tc.exposed[i]) {
					t.Errorf("group %d exposes %v, want %v", i, got, tc.exposed[i])
				}
			}
			if p.EntryGroup() != tc.entryGrp {
				t.Errorf("entry group %d, want %d", p.EntryGroup(), tc.entryGrp)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name, spec, key string
		line            int
		msg             string
	}{
		{"unknown component", "[app]\nname = \"chain\"\n[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\", \"hop2\", \"hop3\", \"hop4\"]]\n",
			"deploy.placements.p", 6, `unknown component "hop4" (app chain has: hop1, hop2, hop3)`},
		{"listed twice in a group", "[app]\nname = \"select\"\n[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"frontend\", \"frontend\", \"selector\"]]\n",
			"deploy.placements.p", 6, `component "frontend" is listed twice in group 1`},
		{"empty group", "[app]\nname = \"select\"\n[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"frontend\", \"selector\"], []]\n",
			"deploy.placements.p", 6, "group 2 of placement \"p\" is empty"},
		{"network inproc", "[app]\nname = \"chain\"\n[deploy]\ntransport = \"inproc\"\nnetwork = \"tcp\"\n",
			"deploy.network", 5, "has no network"},
		{"bad select size", "[app]\nname = \"select\"\nsize = \"huge\"\n", "app.size", 3, `must be "std" or "large"`},
		{"bad op", "[app]\nname = \"rpcops\"\nop = \"fly\"\n", "app.op", 3, "must be one of"},
		{"bad string_len", "[app]\nname = \"rpcops\"\nstring_len = 2048\n", "app.string_len", 3, "between 2 and 1024"},
		{"bad payload", "[app]\nname = \"chain\"\npayload = \"medium\"\n", "app.payload", 3, `must be "small" or "large"`},
		{"unknown app key", "[app]\nname = \"chain\"\nhopz = 3\n", "app.hopz", 3, "unknown key"},
		{"no app name", "[deploy]\ntransport = \"grpc\"\n", "app.name", 0, "missing"},
		{"empty transport", "[app]\nname = \"chain\"\n[deploy]\ntransport = \"\"\n", "deploy.transport", 4, "must not be empty: write one of inproc, grpc"},
		{"empty placement", "[app]\nname = \"chain\"\n[deploy]\nplacement = \"\"\n", "deploy.placement", 4, "must not be empty"},
		{"monolith redefined", "[app]\nname = \"chain\"\n[deploy]\n[deploy.placements]\nmonolith = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n", "deploy.placements.monolith", 5, "built-in placement and cannot be redefined"},
		{"split redefined though not chosen", "[app]\nname = \"chain\"\n[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\", \"hop2\", \"hop3\"]]\nsplit = [[\"hop1\", \"hop2\", \"hop3\"]]\n", "deploy.placements.split", 7, "built-in placement"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runtime.Resolve(parse(t, tc.spec))
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want a *spec.Error", err, err)
			}
			if se.Key != tc.key || se.Line != tc.line || !strings.Contains(se.Error(), tc.msg) {
				t.Errorf("got %q (key %q line %d), want key %q line %d containing %q", se.Error(), se.Key, se.Line, tc.key, tc.line, tc.msg)
			}
		})
	}
}

// wireInproc builds every component of p in this process, connected by
// inproc channels, and returns a connection to the entry.
func wireInproc(t *testing.T, p *runtime.Topology) grpc.ClientConnInterface {
	t.Helper()
	channels := map[string]*inproc.Channel{}
	for _, g := range p.Groups {
		for _, name := range g.Components {
			channels[name] = inproc.New(transport.ServerOptions{}, transport.DialOptions{})
		}
	}
	for name, ch := range channels {
		c, _ := p.Component(name)
		deps := runtime.Deps{}
		for _, d := range c.Deps {
			deps[d] = channels[d]
		}
		impl, err := c.New(context.Background(), deps)
		if err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		ch.RegisterService(c.Service, impl)
	}
	return channels[p.Entry]
}

// TestDefaultRequests runs every app's default requests, for each value of
// the config keys that shape them, through in-process wiring, and checks
// the answers with the requests' own checks.
func TestDefaultRequests(t *testing.T) {
	tests := []struct {
		app   string
		extra string
		n     int
	}{
		{"chain", "", 1},
		{"chain", "hops = 1\npayload = \"large\"", 1},
		{"chain", "hops = 7", 1},
		{"select", "", 1},
		{"select", "size = \"large\"\nseed = 7", 1},
		{"rpcops", "", 5},
		{"rpcops", "op = \"string\"\nstring_len = 1024", 1},
		{"rpcops", "op = \"movie\"", 1},
	}
	for _, tc := range tests {
		t.Run(tc.app+"/"+strings.ReplaceAll(tc.extra, "\n", ","), func(t *testing.T) {
			p, err := runtime.Resolve(parse(t, "[app]\nname = \""+tc.app+"\"\n"+tc.extra+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			reqs := p.Requests()
			if len(reqs) != tc.n {
				t.Fatalf("%d default requests, want %d", len(reqs), tc.n)
			}
			cc := wireInproc(t, p)
			for _, r := range reqs {
				if !strings.HasPrefix(r.Method, "/") || len(r.JSON()) == 0 {
					t.Errorf("%s: method %q, JSON %q", r.Name, r.Method, r.JSON())
				}
				if _, err := r.Invoke(context.Background(), cc); err != nil {
					t.Errorf("%s: %v", r.Name, err)
				}
			}
		})
	}
}

func TestPayloadSizes(t *testing.T) {
	for _, tc := range []struct {
		payload string
		size    int
	}{{chain.Small, chain.SmallSize}, {chain.Large, chain.LargeSize}} {
		for _, hop := range []int{1, 12} {
			if got := len(chain.HopText(hop, tc.payload)); got != tc.size {
				t.Errorf("hop %d %s text: %d bytes, want %d", hop, tc.payload, got, tc.size)
			}
		}
		if got := len(chain.Expected(3, tc.payload)); got != 3*tc.size {
			t.Errorf("3-hop %s answer: %d bytes, want %d", tc.payload, got, 3*tc.size)
		}
	}
	if chain.SmallSize > 120 {
		t.Errorf("a small text must be at most 120 bytes, as in S2")
	}
	v := selectapp.Values(1, selectapp.LargeSize)
	if len(v) != selectapp.LargeSize || !slices.Equal(v, selectapp.Values(1, selectapp.LargeSize)) {
		t.Errorf("values are not a deterministic %d ints", selectapp.LargeSize)
	}
	for _, x := range v {
		if x < 0 || x > selectapp.MaxValue {
			t.Fatalf("value %d outside 0..%d", x, selectapp.MaxValue)
		}
	}
}

func TestResolveCarriesHTTPCodec(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"[app]\nname = \"select\"\n[deploy]\ntransport = \"http\"\nplacement = \"split\"\n", spec.HTTPCodecFast},
		{"[app]\nname = \"select\"\n[deploy]\ntransport = \"http\"\nplacement = \"split\"\nhttp_codec = \"protojson\"\n", spec.HTTPCodecProtojson},
	} {
		p, err := runtime.Resolve(parse(t, tc.spec))
		if err != nil {
			t.Fatal(err)
		}
		if p.HTTPCodec != tc.want {
			t.Errorf("%q: HTTPCodec %q, want %q", tc.spec, p.HTTPCodec, tc.want)
		}
	}
}
