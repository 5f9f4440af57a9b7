package main

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestImagePush: `svclab image --push --binary` puts a static binary into
// an image a real registry implementation (go-containerregistry's,
// in-process) accepts; the image pulled back holds the binary, which runs.
// The binary is a small static program: a static build of all of svclab
// takes minutes (its -trimpath, CGO_ENABLED=0 packages share no build
// cache with the usual build); internal/image's tests build from source
// through the same Build.
func TestImagePush(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module example.com/stand\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"svclab version stand-in\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	static := filepath.Join(t.TempDir(), "stand")
	build := exec.Command("go", "build", "-o", static, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in: %v\n%s", err, out)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/lab/svclab:test"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, code := svclab(t, ctx, nil, "image", "--push", ref, "--binary", static)
	if code != 0 {
		t.Fatalf("svclab image exited %d:\n%s", code, stderr)
	}
	pinned := strings.TrimSpace(stdout)
	if !strings.Contains(pinned, "@sha256:") {
		t.Fatalf("svclab image printed %q, want the reference by digest", stdout)
	}
	r, err := name.ParseReference(pinned)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s: %v", pinned, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(root, filepath.Clean("/"+h.Name)), os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(f, tr)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	ep := cf.Config.Entrypoint
	out, err := exec.Command(filepath.Join(root, ep[0]), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%v --version from the image: %v\n%s", ep, err, out)
	}
	if !strings.Contains(string(out), "svclab version") {
		t.Fatalf("the image's svclab says %q", out)
	}
}

func TestImageBadUse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"image"}, "one of --push REF and --tarball FILE"},
		{[]string{"image", "--tarball", "x.tar", "--source", "testdata"}, "--source testdata"},
		{[]string{"image", "--tarball", "x.tar", "--platform", "windows/amd64"}, "want linux/ARCH"},
	} {
		_, stderr, code := svclab(t, context.Background(), nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("svclab %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
