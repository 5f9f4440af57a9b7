// Package image builds the OCI image the kube deployer runs: one static
// svclab binary in one layer, with no base image and no container daemon,
// as ko does, using go-containerregistry; and pushes it to a registry or
// writes it to a tarball.
//
// A static binary (CGO_ENABLED=0) needs nothing of a base image: no libc,
// no shell. The image runs as an unprivileged user (65532, distroless's
// "nonroot"), and its labels say what it was built from
// (org.opencontainers.image.*).
//
// FromFiles makes an image of other files of this machine, a program and
// the libraries it loads, for a cluster that can pull no image (the real
// node's stand-in for the official postgres image, in kubetest).
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

	"github.com/svclab/svclab/internal/procgroup"
)

// BinaryPath is where the binary lives in the image, and the entrypoint.
const BinaryPath = "/svclab"

// HostBinaryPath is where the lean host binary (cmd/svclab-host) lives in
// an image that has it: beside the binary, where `svclab host` finds it
// and hands over (internal/deploy/hostentry, ExecLean).
const HostBinaryPath = BinaryPath + "-host"

// NonRoot is the image's user: no permission a pod should need.
const NonRoot = "65532:65532"

// Build compiles the main package pkg (e.g. "./cmd/svclab") of the module
// in dir into a static binary for platform, in outDir, and returns its
// path, named after the package's directory ("svclab" for the module's
// root). ldflags are passed to the linker (the version stamp).
func Build(ctx context.Context, dir, pkg string, platform v1.Platform, ldflags, outDir string) (string, error) {
	name := filepath.Base(pkg)
	if name == "." || name == "/" {
		name = "svclab"
	}
	out := filepath.Join(outDir, name+"-"+platform.OS+"-"+platform.Architecture)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+platform.OS, "GOARCH="+platform.Architecture)
	if platform.Variant != "" && platform.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(platform.Variant, "v"))
	}
	// The build dies with svclab, and a cancelled one takes its
	// compilers along: they share its process group, which is signalled
	// only until the build is reaped (Cancel may run after that).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	group := procgroup.New(cmd)
	cmd.Cancel = func() error { return group.Signal(syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Start()
	if err == nil {
		err = group.Wait()
	}
	if err != nil {
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
	// Host, when set, is the static lean host binary built from the same
	// source as the binary (cmd/svclab-host), put at HostBinaryPath: the
	// pods' `svclab host` hands over to it, and a host holds less than
	// half the memory.
	Host string
}

// New makes an image of the static binary at path (and opts.Host).
func New(path string, opts Options) (v1.Image, error) {
	files := []File{{Path: BinaryPath, Src: path, Mode: 0o755}}
	if opts.Host != "" {
		files = append(files, File{Path: HostBinaryPath, Src: opts.Host, Mode: 0o755})
	}
	for _, f := range files {
		if err := checkStatic(f.Src); err != nil {
			return nil, err
		}
	}
	return assemble(files, "svclab image: "+filepath.Base(path),
		Config{Entrypoint: []string{BinaryPath}, User: NonRoot, WorkingDir: "/"}, opts)
}

// File is one entry of an image's layer.
type File struct {
	// Path is where it is in the image, absolute.
	Path string
	// Src is the file of this machine whose content it has (symbolic
	// links followed), or Data its content.
	Src  string
	Data []byte
	// Link makes it a symbolic link to Link. Without Src, Data or Link
	// it is a directory.
	Link string
	// Mode is its permission bits (and setgid, sticky).
	Mode int64
	// UID and GID own it: root's, 0, unless the image's user must write it.
	UID, GID int
}

// Config is how an image's container runs.
type Config struct {
	Entrypoint []string
	// Env is the container's environment, NAME=value.
	Env []string
	// User is uid:gid.
	User       string
	WorkingDir string
}

// FromFiles makes an image of one layer holding files, in their order
// (a directory before what it holds), that runs as cfg says: an image of
// programs this machine has, for a cluster that can pull none (the real
// node's stand-ins, internal/deploy/kube/kubetest). Its digest depends on
// the files' contents and opts alone, as New's.
func FromFiles(files []File, cfg Config, opts Options) (v1.Image, error) {
	if len(cfg.Entrypoint) == 0 {
		return nil, fmt.Errorf("image: no entrypoint")
	}
	return assemble(files, "svclab image: "+cfg.Entrypoint[0], cfg, opts)
}

// assemble makes the image of one layer of files, its history saying
// createdBy.
func assemble(files []File, createdBy string, cfg Config, opts Options) (v1.Image, error) {
	layerTar, err := layerOf(files, opts.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Author:    "svclab image",
			Created:   v1.Time{Time: opts.Created},
			CreatedBy: createdBy,
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
	cf.Config.Entrypoint = cfg.Entrypoint
	cf.Config.Env = cfg.Env
	cf.Config.User = cfg.User
	cf.Config.WorkingDir = cfg.WorkingDir
	cf.Config.Labels = opts.Labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	return img, nil
}

// layerOf is the layer's tar of files. A file's owner is root unless it
// says otherwise, so the non-root user cannot change the binaries.
func layerOf(files []File, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{
			Name:     strings.TrimPrefix(f.Path, "/"),
			Mode:     f.Mode,
			Uid:      f.UID,
			Gid:      f.GID,
			ModTime:  created,
			Format:   tar.FormatPAX,
			Typeflag: tar.TypeDir,
		}
		b := f.Data
		switch {
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		case f.Src != "":
			var err error
			if b, err = os.ReadFile(f.Src); err != nil {
				return nil, fmt.Errorf("image: read %s: %w", f.Src, err)
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(b))
		case f.Data != nil:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(b))
		default:
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("image: layer: %s: %w", f.Path, err)
		}
		if _, err := tw.Write(b); err != nil {
			return nil, fmt.Errorf("image: layer: %s: %w", f.Path, err)
		}
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
