package sidecar

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binaryOrSkip returns k's program, or skips the test saying how to get it.
func binaryOrSkip(t *testing.T, k Kind) string {
	t.Helper()
	bin, err := k.Binary()
	if err != nil {
		t.Skipf("%s is not installed: %v", k.Name(), err)
	}
	return bin
}

// TestRenderAccepted renders every kind's configuration for every
// protocol and has the real program check it.
func TestRenderAccepted(t *testing.T) {
	for _, name := range Names() {
		k, _ := Lookup(name)
		for _, proto := range []Protocol{HTTP1, HTTP2, TCP} {
			t.Run(name+"/"+string(proto), func(t *testing.T) {
				bin := binaryOrSkip(t, k)
				dir := t.TempDir()
				c := Config{Name: "hop1." + name, Protocol: proto, Dir: dir, Threads: 2, Listeners: []Listener{
					{Name: "in_hop1", Port: 41001, Upstream: "127.0.0.1:41002", Inbound: true},
					{Name: "out_0_hop2", Port: 41003, Upstream: "127.0.0.1:41004"},
				}}
				text, err := k.Render(c)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"41001", "41002", "41003", "41004"} {
					if !strings.Contains(string(text), want) {
						t.Errorf("configuration lacks %s:\n%s", want, text)
					}
				}
				path := filepath.Join(dir, k.ConfigFile())
				if err := os.WriteFile(path, text, 0o600); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				out, err := exec.CommandContext(ctx, bin, k.CheckArgs(path, c)...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s rejects its configuration: %v\n%s\nconfiguration:\n%s", name, err, out, text)
				}
			})
		}
	}
}

func TestProtocolOf(t *testing.T) {
	for tr, want := range map[string]Protocol{"grpc": HTTP2, "http": HTTP1, "netrpc": TCP, "protorpc": TCP} {
		if got, err := ProtocolOf(tr); err != nil || got != want {
			t.Errorf("ProtocolOf(%q) = %q, %v; want %q", tr, got, err, want)
		}
	}
	if _, err := ProtocolOf("inproc"); err == nil {
		t.Error("ProtocolOf(inproc) succeeded")
	}
}
