// Package image builds the OCI image the kube deployer runs: one static
// svclab binary in one layer, with no base image and no container daemon,
// as ko does, using go-containerregistry; and pushes it to a registry or
// writes it to a tarball.
//
// A static binary (CGO_ENABLED=0) needs nothing of a base image: no libc,
// no shell. The image runs as an unprivileged user (65532, distroless's
// "nonroot"), and its labels say what it was built from
// (org.opencontainers.image.*).
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BinaryPath is where the binary lives in the image, and the entrypoint.
const BinaryPath = "/svclab"

// NonRoot is the image's user: no permission a pod should need.
const NonRoot = "65532:65532"

// Build compiles the main package pkg (e.g. "./cmd/svclab") of the module
// in dir into a static binary for platform, in outDir, and returns its
// path. ldflags are passed to the linker (the version stamp).
func Build(ctx context.Context, dir, pkg string, platform v1.Platform, ldflags, outDir string) (string, error) {
	out := filepath.Join(outDir, "svclab-"+platform.OS+"-"+platform.Architecture)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+platform.OS, "GOARCH="+platform.Architecture)
	if platform.Variant != "" && platform.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(platform.Variant, "v"))
	}
	// The build dies with svclab, and a cancelled one takes its
	// compilers along: they share its process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("image: go build %s in %s for %s: %w\n%s", pkg, dir, platform, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Options describe the image around the binary.
type Options struct {
	// Platform the binary was built for.
	Platform v1.Platform
	// Labels are added to the image's config
	// (org.opencontainers.image.version, .revision, .source).
	Labels map[string]string
	// Created is the image's creation time; the zero value is the Unix
	// epoch, so the same binary makes the same image digest (ko does the
	// same, for reproducible builds).
	Created time.Time
}

// New makes an image of the static binary at path.
func New(path string, opts Options) (v1.Image, error) {
	if err := checkStatic(path); err != nil {
		return nil, err
	}
	layerTar, err := layerOf(path, opts.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer of %s: %w", path, err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Author:    "svclab image",
			Created:   v1.Time{Time: opts.Created},
			CreatedBy: "svclab image: " + filepath.Base(path),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("image: append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = opts.Platform.OS, opts.Platform.Architecture, opts.Platform.Variant
	cf.Created = v1.Time{Time: opts.Created}
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.User = NonRoot
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = opts.Labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	return img, nil
}

// layerOf is the layer's tar: the binary at BinaryPath, mode 0755, owned
// by root so the non-root user cannot change it.
func layerOf(path string, created time.Time) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image: read binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Name:     strings.TrimPrefix(BinaryPath, "/"),
		Mode:     0o755,
		Size:     int64(len(b)),
		Typeflag: tar.TypeReg,
		ModTime:  created,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	return buf.Bytes(), nil
}

// checkStatic refuses a binary that needs a dynamic loader, which an
// image without a base does not have.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("image: %s: not an ELF binary: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("image: %s is dynamically linked (it needs a loader, which an image with no base has not); build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// Push writes img to the registry of ref, authenticating as the user's
// container tools do (authn.DefaultKeychain: ~/.docker/config.json and
// its credential helpers), and returns the reference by digest, which
// pins what the cluster runs.
func Push(ctx context.Context, img v1.Image, ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("image: reference %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("image: push %s: %w", r, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("image: digest: %w", err)
	}
	return r.Context().Digest(d.String()).String(), nil
}

// WriteTarball writes img, tagged ref, to path as a tarball that `docker
// load`, `podman load`, `kind load image-archive` and crane read.
func WriteTarball(img v1.Image, ref, path string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image: reference %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(path, r, img); err != nil {
		return fmt.Errorf("image: write %s: %w", path, err)
	}
	return nil
}
