package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/langhost"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
)

// needLanguage skips t, saying what is missing, unless lang's toolchain is
// on PATH and its implementation is built (`make java`, `make pyimpl`; `make
// test` builds both before the Go tests).
func needLanguage(t *testing.T, lang string) {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	b := map[string]struct{ tool, artifact, target string }{
		runtime.LangJava:   {"java", "impl/java/target/svclab-java.jar", "make java"},
		runtime.LangPython: {"python3", "impl/python/.venv/bin/python", "make pyimpl"},
	}[lang]
	tool, artifact, target := b.tool, b.artifact, b.target
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s: %s not found on PATH, so %s components are not deployed", lang, tool, lang)
	}
	if _, err := os.Stat(filepath.Join(root, artifact)); err != nil {
		t.Skipf("%s: %s is not built (run %s), so %s components are not deployed", lang, artifact, target, lang)
	}
}

// TestLanguages deploys topologies that mix Go with Java and Python hosts
// and calls them through svclab's transports, as the load generator does.
func TestLanguages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, app, transport, component, lang string
	}{
		{"java selector over grpc", "select", "grpc", "selector", runtime.LangJava},
		{"java selector over http", "select", "http", "selector", runtime.LangJava},
		{"python selector over grpc", "select", "grpc", "selector", runtime.LangPython},
		{"python selector over http", "select", "http", "selector", runtime.LangPython},
		// A Python client-side hop (rpcops' frontend) calling a Go server.
		{"python frontend, go ops", "rpcops", "grpc", "frontend", runtime.LangPython},
		{"java frontend, go ops over http", "rpcops", "http", "frontend", runtime.LangJava},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			needLanguage(t, tc.lang)
			p := resolve(t, "[app]\nname = \""+tc.app+"\"\n[deploy]\nplacement = \"split\"\nstart_timeout = \"90s\"\ntransport = \""+tc.transport+"\"\n[deploy.languages]\n"+tc.component+" = \""+tc.lang+"\"\n")
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			d, err := localDeployer(t).Deploy(ctx, p, deploy.Options{})
			if err != nil {
				t.Fatalf("deploy: %v", err)
			}
			stopped := false
			defer func() {
				if !stopped {
					_ = d.Stop(context.Background())
				}
			}()
			// The group runs the language's host, not svclab.
			proc := d.Processes()[p.GroupOf(tc.component)]
			cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(proc.Info().PID) + "/cmdline")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{runtime.LangJava: "svclab-java.jar", runtime.LangPython: "svclab_impl"}[tc.lang]
			if !bytes.Contains(cmdline, []byte(want)) {
				t.Errorf("group %s runs %q, want the %s host (%s)", tc.component, strings.ReplaceAll(string(cmdline), "\x00", " "), tc.lang, want)
			}
			checkProcesses(t, ctx, d)
			checkDescribe(t, d)

			conn, err := d.Dial(ctx, transport.DialOptions{})
			if err != nil {
				t.Fatalf("dial entry: %v", err)
			}
			defer conn.Close()
			for _, r := range p.Requests() {
				if _, err := r.Invoke(ctx, conn); err != nil {
					t.Errorf("%s over %s: %v", r.Name, d.Entry(), err)
				}
				if err := postGateway(ctx, d.GatewayURL(), r); err != nil {
					t.Errorf("%s through the gateway: %v", r.Name, err)
				}
			}
			checkDeadline(t, d, tc.app, conn)

			pids := deploymentProcs(d.ID())
			if len(pids) != len(p.Groups) {
				t.Errorf("%d processes carry the deployment's id, want %d", len(pids), len(p.Groups))
			}
			stopped = true
			if err := d.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
			if left := deploymentProcs(d.ID()); len(left) > 0 {
				t.Errorf("processes %v outlived Stop", left)
			}
		})
	}
}

// TestLanguagesBehindSidecars deploys a Java or Python component behind a
// proxy: the proxy names the component it stands before, but only the host
// prints the ready line its start waits for.
func TestLanguagesBehindSidecars(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lang, sidecar, mode, transport string
		mtls                           bool // carried by the proxies alone
	}{
		{runtime.LangJava, spec.SidecarEnvoy, "sidecar", "grpc", false},
		{runtime.LangPython, spec.SidecarHAProxy, "sidecar", "grpc", false},
		{runtime.LangJava, spec.SidecarEnvoy, "node", "grpc", false},
		{runtime.LangPython, spec.SidecarEnvoy, "sidecar", "grpc", true},
		{runtime.LangJava, spec.SidecarNginx, "sidecar", "grpc", true},
		// nginx names its upstream in Host unless told to pass the
		// caller's, and the Java host refuses the name's underscore.
		{runtime.LangJava, spec.SidecarNginx, "sidecar", "http", false},
		{runtime.LangJava, spec.SidecarHAProxy, "sidecar", "http", true},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s/%s/mtls=%v", tc.lang, tc.sidecar, tc.mode, tc.transport, tc.mtls), func(t *testing.T) {
			needLanguage(t, tc.lang)
			proxyOrSkip(t, tc.sidecar)
			p := resolve(t, "[app]\nname = \"select\"\n[deploy]\nplacement = \"split\"\nstart_timeout = \"60s\"\ntransport = \""+tc.transport+"\"\nsidecar = \""+tc.sidecar+"\"\nproxy_mode = \""+tc.mode+"\"\nmtls = "+strconv.FormatBool(tc.mtls)+"\n[deploy.languages]\nselector = \""+tc.lang+"\"\n")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			d, err := localDeployer(t).Deploy(ctx, p, deploy.Options{})
			if err != nil {
				t.Fatalf("deploy: %v", err)
			}
			defer d.Stop(context.Background())
			conn, err := d.Dial(ctx, transport.DialOptions{})
			if err != nil {
				t.Fatalf("dial entry: %v", err)
			}
			defer conn.Close()
			for _, r := range p.Requests() {
				if _, err := r.Invoke(ctx, conn); err != nil {
					t.Errorf("%s over %s: %v", r.Name, d.Entry(), err)
				}
			}
			if err := d.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
			if left := deploymentProcs(d.ID()); len(left) > 0 {
				t.Errorf("processes %v outlived Stop", left)
			}
		})
	}
}

// TestLanguagesNoOrphan kills a foreground deployer (`svclab up`) of a
// Java and a Python component with -9: the JVM and the interpreter must die
// with it.
func TestLanguagesNoOrphan(t *testing.T) {
	needLanguage(t, runtime.LangJava)
	needLanguage(t, runtime.LangPython)
	path := writeSpec(t, "[app]\nname = \"select\"\n[deploy]\nplacement = \"split\"\nstart_timeout = \"90s\"\n[deploy.languages]\nselector = \"java\"\nfrontend = \"python\"\n")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), upSpecEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	id, err := readDeploymentID(out, 100*time.Second)
	if err != nil {
		t.Fatalf("up did not report a deployment: %v; stderr:\n%s", err, stderr.String())
	}
	pids := deploymentProcs(id)
	if len(pids) != 2 {
		t.Fatalf("%d processes of deployment %s before the kill, want 2", len(pids), id)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	awaitNoProcs(t, id)
}

// TestLanguageFaults: a missing build is an error before anything starts,
// naming the key and the make target; a JVM that cannot start gives its
// own words.
func TestLanguageFaults(t *testing.T) {
	needLanguage(t, runtime.LangJava)
	src := "[app]\nname = \"select\"\n[deploy]\nplacement = \"split\"\n[deploy.languages]\nselector = \"java\"\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("not built", func(t *testing.T) {
		t.Setenv(langhost.ImplDirEnv, t.TempDir())
		d, err := localDeployer(t).Deploy(ctx, resolve(t, src), deploy.Options{})
		if err == nil {
			_ = d.Stop(ctx)
			t.Fatal("deployed without a jar")
		}
		for _, want := range []string{`deploy.languages.selector = "java"`, "svclab-java.jar", "make java", langhost.ImplDirEnv} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("not built, at resolve", func(t *testing.T) {
		// What `svclab run` and `up` see: a spec error at the key's line,
		// before the first run.
		t.Setenv(langhost.ImplDirEnv, t.TempDir())
		s, err := spec.Load(writeSpec(t, src))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = deploy.Resolve(s)
		var se *spec.Error
		if !errors.As(err, &se) || se.Key != "deploy.languages.selector" || se.Line != 6 || !strings.Contains(err.Error(), "make java") {
			t.Errorf("resolve: %v, want a spec error at deploy.languages.selector, line 6, naming make java", err)
		}
	})
	t.Run("bad heap flag", func(t *testing.T) {
		start := time.Now()
		d, err := localDeployer(t).Deploy(ctx, resolve(t, src), deploy.Options{Env: []string{"JAVA_TOOL_OPTIONS=-Xmx1k"}})
		if err == nil {
			_ = d.Stop(ctx)
			t.Fatal("deployed a JVM with a 1 KB heap")
		}
		// The JVM's own message, from its output tail.
		if !strings.Contains(err.Error(), "heap") || !strings.Contains(err.Error(), "group selector") {
			t.Errorf("error does not carry the JVM's output and group:\n%v", err)
		}
		if el := time.Since(start); el > 30*time.Second {
			t.Errorf("the failure took %s to report", el)
		}
	})
}
