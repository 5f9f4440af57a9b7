package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/svclab/svclab/internal/image"
)

// importImages builds svclab's image and the sandbox's (tools/kube/pause)
// as `svclab image --tarball` does, and the stand-in for the official
// postgres image (postgres.go) where this machine has PostgreSQL, and
// imports them into the node's containerd, in the namespace the CRI
// uses: no registry is involved, and the pods' imagePullPolicy
// (IfNotPresent, Kubernetes' default for a tag other than latest) finds
// them there.
// With sandboxOnly it imports the sandbox's image alone.
func (c *Cluster) importImages(ctx context.Context, sock string, sandboxOnly bool) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	out := filepath.Join(NodeDir, "images")
	if err := os.MkdirAll(out, 0o700); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	build := func(dir, pkg string) (string, error) {
		return image.Build(ctx, filepath.Join(root, dir), pkg, plat, "", out)
	}
	images := []struct{ dir, pkg, tag string }{
		{filepath.Join("tools", "kube", "pause"), ".", PauseImage},
		{".", "./cmd/svclab", Image},
	}
	if sandboxOnly {
		c.NoPostgres = "no stand-in for the postgres image: the node was started with kubetest.Options.SandboxImageOnly"
		images = images[:1]
	}
	for _, im := range images {
		bin, err := build(im.dir, im.pkg)
		if err != nil {
			return fmt.Errorf("kubetest: image %s: %w", im.tag, err)
		}
		img, err := image.New(bin, image.Options{Platform: plat})
		os.Remove(bin)
		if err != nil {
			return fmt.Errorf("kubetest: image %s: %w", im.tag, err)
		}
		if err := importImage(ctx, sock, img, im.tag, out); err != nil {
			return err
		}
	}
	if sandboxOnly {
		return nil
	}
	if err := c.importPostgres(ctx, sock, plat, build, out); err != nil {
		return err
	}
	// Images no registry here serves, saved elsewhere with `docker save`
	// or `ctr images export`.
	extra, _ := filepath.Glob(filepath.Join(ExtraImagesDir(), "*.tar"))
	for _, tar := range extra {
		if err := ctr(ctx, sock, "images", "import", tar); err != nil {
			return err
		}
	}
	return nil
}

// importPostgres builds the stand-in postgres image and imports it, and
// sets PostgresImage; without PostgreSQL on this machine it sets
// NoPostgres instead.
func (c *Cluster) importPostgres(ctx context.Context, sock string, plat v1.Platform, build func(dir, pkg string) (string, error), out string) error {
	in, err := findPostgres(ctx)
	if err != nil {
		c.NoPostgres = "no stand-in for the postgres image: " + err.Error()
		return nil
	}
	entry, err := build(filepath.Join("tools", "kube", "postgres"), ".")
	if err != nil {
		return fmt.Errorf("kubetest: the postgres image's entrypoint: %w", err)
	}
	defer os.Remove(entry)
	tag, img, err := postgresImage(ctx, in, entry, plat)
	if err != nil {
		return err
	}
	if err := importImage(ctx, sock, img, tag, out); err != nil {
		return err
	}
	c.PostgresImage = tag
	return nil
}

// importImage writes img, tagged tag, to a tarball in dir and imports it
// into the node's containerd.
func importImage(ctx context.Context, sock string, img v1.Image, tag, dir string) error {
	tar := filepath.Join(dir, "image.tar")
	defer os.Remove(tar)
	if err := image.WriteTarball(img, tag, tar); err != nil {
		return fmt.Errorf("kubetest: image %s: %w", tag, err)
	}
	return ctr(ctx, sock, "images", "import", tar)
}

// ExtraImagesDir holds image archives the real node imports at every
// start beside svclab's: ${XDG_CACHE_HOME:-~/.cache}/svclab/node-images.
func ExtraImagesDir() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "svclab", "node-images")
}

// HasImage says whether the node's containerd holds the image ref.
func (c *Cluster) HasImage(ctx context.Context, ref string) bool {
	out, err := exec.CommandContext(ctx, "ctr", "--address", filepath.Join(NodeDir, "containerd.sock"), "--namespace", "k8s.io",
		"images", "ls", "-q", "name=="+normalize(ref)).Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// Tag gives svclab's image in the node's containerd another tag (a
// versioned svclab's default deploy.kube.image, svclab:VERSION).
func (c *Cluster) Tag(ctx context.Context, tag string) error {
	if tag == Image {
		return nil
	}
	return ctr(ctx, filepath.Join(NodeDir, "containerd.sock"), "images", "tag", "--force", normalize(Image), normalize(tag))
}

// normalize names an image as containerd stores a short reference.
func normalize(ref string) string {
	name, _, _ := strings.Cut(ref, ":")
	if strings.ContainsAny(strings.SplitN(name, "/", 2)[0], ".:") && strings.Contains(name, "/") {
		return ref
	}
	if !strings.Contains(name, "/") {
		return "docker.io/library/" + ref
	}
	return "docker.io/" + ref
}

// ctr runs containerd's client on the node's socket, in the CRI's
// namespace.
func ctr(ctx context.Context, sock string, args ...string) error {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubetest: ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// moduleRoot is svclab's source tree, which the images are built from.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("kubetest: svclab's source tree (go env GOMOD: %q, %v): run from it", gomod, err)
	}
	return filepath.Dir(gomod), nil
}
