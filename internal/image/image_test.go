package image

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// buildHello builds testdata/hello (a stand-in for svclab that builds in
// seconds) with Build, stamped with version.
func buildHello(t *testing.T, version string) string {
	t.Helper()
	mod := t.TempDir()
	src, err := os.ReadFile("testdata/hello/main.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"go.mod":  []byte("module example.com/hello\n\ngo 1.22\n"),
		"main.go": src,
	} {
		if err := os.WriteFile(filepath.Join(mod, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	bin, err := Build(context.Background(), mod, ".", plat, "-X main.version="+version, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// eachFile calls f with each entry of img's file system and its content.
func eachFile(t *testing.T, img v1.Image, f func(*tar.Header, io.Reader)) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		f(h, tr)
	}
}

// runFromImage extracts the image's file system and runs its entrypoint
// with args, as a container runtime would (without the isolation).
func runFromImage(t *testing.T, img v1.Image, args ...string) string {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	eachFile(t, img, func(h *tar.Header, r io.Reader) {
		p := filepath.Join(root, filepath.Clean("/"+h.Name))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, r); err != nil {
			t.Fatal(err)
		}
		f.Close()
	})
	ep := cf.Config.Entrypoint
	out, err := exec.Command(filepath.Join(root, ep[0]), append(ep[1:], args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v %v in the image: %v\n%s", ep, args, err, out)
	}
	return string(out)
}

func TestPushPullRun(t *testing.T) {
	bin := buildHello(t, "v9.8.7")
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	img, err := New(bin, Options{Platform: plat, Labels: map[string]string{"org.opencontainers.image.version": "v9.8.7"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/svclab/svclab:test"
	pinned, err := Push(context.Background(), img, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pinned, "@sha256:") {
		t.Fatalf("Push returned %q, want a digest reference", pinned)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	want, _ := img.Digest()
	if got, _ := pulled.Digest(); got != want {
		t.Fatalf("pulled digest %s, pushed %s", got, want)
	}
	mt, _ := pulled.MediaType()
	if mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want OCI", mt)
	}
	layers, _ := pulled.Layers()
	if len(layers) != 1 {
		t.Fatalf("%d layers, want one (the binary)", len(layers))
	}
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if cf.Config.User != NonRoot || cf.Config.Labels["org.opencontainers.image.version"] != "v9.8.7" {
		t.Errorf("config user %q labels %v", cf.Config.User, cf.Config.Labels)
	}
	if out := runFromImage(t, pulled, "--version"); !strings.Contains(out, "hello version v9.8.7") {
		t.Fatalf("the image's binary says %q", out)
	}
}

// TestReproducible: the same binary makes the same digest, so a push of an
// unchanged build changes nothing in the cluster.
func TestReproducible(t *testing.T) {
	bin := buildHello(t, "v1")
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	a, err := New(bin, Options{Platform: plat})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(bin, Options{Platform: plat})
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("two images of one binary: %s and %s", da, db)
	}
}

func TestTarball(t *testing.T) {
	bin := buildHello(t, "v2")
	img, err := New(bin, Options{Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "svclab.tar")
	if err := WriteTarball(img, "example.com/svclab:v2", p); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("example.com/svclab:v2")
	back, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if out := runFromImage(t, back, "--version"); !strings.Contains(out, "hello version v2") {
		t.Fatalf("the tarball's binary says %q", out)
	}
}

// TestRefusesDynamic: a binary that needs a loader would not start in an
// image without a base; New says so.
func TestRefusesDynamic(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to stand for a dynamic binary")
	}
	sh, _ = filepath.EvalSymlinks(sh)
	_, err = New(sh, Options{Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("New(%s) = %v, want a dynamic-linking error", sh, err)
	}
}

// TestFromFiles: an image of files of this machine holds each as asked
// (a directory the image's user owns, a symbolic link, a file's content
// and mode, a file made here), runs as its Config says, and the same files make the same
// digest.
func TestFromFiles(t *testing.T) {
	src := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(src, []byte("#!/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []File{
		{Path: "/usr/bin", Mode: 0o755},
		{Path: "/usr/bin/prog", Src: src, Mode: 0o755},
		{Path: "/bin", Link: "usr/bin"},
		{Path: "/data", Mode: 0o700, UID: 999, GID: 999},
		{Path: "/data/x", Data: []byte("made here"), Mode: 0o600, UID: 999, GID: 999},
	}
	cfg := Config{Entrypoint: []string{"/usr/bin/prog"}, Env: []string{"PATH=/usr/bin"}, User: "999:999", WorkingDir: "/data"}
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	img, err := FromFiles(files, cfg, Options{Platform: plat})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	eachFile(t, img, func(h *tar.Header, r io.Reader) {
		b, _ := io.ReadAll(r)
		got[h.Name] = fmt.Sprintf("%c %o %d:%d %s%s", h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname, b)
	})
	want := map[string]string{
		"usr/bin":      fmt.Sprintf("%c 755 0:0 ", tar.TypeDir),
		"usr/bin/prog": fmt.Sprintf("%c 755 0:0 #!/bin/true\n", tar.TypeReg),
		"bin":          fmt.Sprintf("%c 0 0:0 usr/bin", tar.TypeSymlink),
		"data":         fmt.Sprintf("%c 700 999:999 ", tar.TypeDir),
		"data/x":       fmt.Sprintf("%c 600 999:999 made here", tar.TypeReg),
	}
	if !maps.Equal(got, want) {
		t.Errorf("layer\n got %q\nwant %q", got, want)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if c := cf.Config; !slices.Equal(c.Entrypoint, cfg.Entrypoint) || !slices.Equal(c.Env, cfg.Env) || c.User != cfg.User || c.WorkingDir != cfg.WorkingDir {
		t.Errorf("config %+v, want %+v", c, cfg)
	}
	again, err := FromFiles(files, cfg, Options{Platform: plat})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustDigest(t, img), mustDigest(t, again); a != b {
		t.Errorf("the same files made %s and %s", a, b)
	}
	if _, err := FromFiles(files, Config{}, Options{Platform: plat}); err == nil {
		t.Error("an image without an entrypoint was made")
	}
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestHostBinary: an image given the lean host binary holds it beside the
// binary, where `svclab host` looks; one that needs a loader is refused.
func TestHostBinary(t *testing.T) {
	bin, host := buildHello(t, "v1"), buildHello(t, "v1-host")
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	img, err := New(bin, Options{Platform: plat, Host: host})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	eachFile(t, img, func(h *tar.Header, r io.Reader) {
		found = append(found, "/"+h.Name)
		if "/"+h.Name != HostBinaryPath {
			return
		}
		b, _ := io.ReadAll(r)
		if string(b) != string(want) || h.Mode != 0o755 {
			t.Errorf("%s: %d bytes, mode %o; want the host binary's %d, mode 755", h.Name, len(b), h.Mode, len(want))
		}
	})
	if !slices.Equal(found, []string{BinaryPath, HostBinaryPath}) {
		t.Errorf("image files %q, want %s and %s", found, BinaryPath, HostBinaryPath)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to stand for a dynamic binary")
	}
	sh, _ = filepath.EvalSymlinks(sh)
	if _, err := New(bin, Options{Platform: plat, Host: sh}); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("New with the host binary %s = %v, want a dynamic-linking error", sh, err)
	}
}
