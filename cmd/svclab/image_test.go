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

// TestImagePush: `svclab image --push` builds svclab from this source tree
// into an image a real registry implementation (go-containerregistry's,
// in-process) accepts; the image pulled back holds a static svclab that
// runs and says its version.
func TestImagePush(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/lab/svclab:test"
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	stdout, stderr, code := svclab(t, ctx, nil, "image", "--push", ref, "--source", "../..")
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
