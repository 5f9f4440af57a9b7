package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestUpNamesTheValuesItDeploys: up on a spec with factors says which
// value of each deployed factor's key it uses, the spec's own or the
// default, and leaves out the keys a --set picked and the factors of the
// load it does not send.
func TestUpNamesTheValuesItDeploys(t *testing.T) {
	t.Parallel()
	spec := writeFile(t, "f.toml", `[app]
name = "chain"
hops = 2
[deploy]
transport = "grpc"
[load]
users = 3
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
"deploy.placement" = ["monolith", "split"]
"load.users" = [3, 9]
`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A readiness timeout of 1 ns ends up as soon as it has deployed.
	_, stderr, _ := svclab(t, ctx, []string{marker(t)}, "up", "--timeout", "1ns", "--set", "deploy.transport=http", spec)
	want := "note: up deploys the spec as written, not its factors' levels: deploy.placement = its default (levels {monolith, split}). Pick a level with --set KEY=VALUE."
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr:\n%s\nwant the line\n%s", stderr, want)
	}
	if strings.Contains(stderr, "load.users") || strings.Contains(stderr, "deploy.transport =") {
		t.Errorf("the note names load.users, which up does not use, or deploy.transport, which --set picked:\n%s", stderr)
	}
	// With every deployed factor's key picked, there is nothing to say.
	_, stderr, _ = svclab(t, ctx, []string{marker(t)}, "up", "--timeout", "1ns", "--set", "deploy.transport=http", "--set", "deploy.placement=split", spec)
	if strings.Contains(stderr, "note: up deploys") {
		t.Errorf("a note with every factor's key picked:\n%s", stderr)
	}
}
