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
// as `svclab image --tarball` does, and imports both into the node's
// containerd, in the namespace the CRI uses: no registry is involved, and
// the pods' imagePullPolicy (IfNotPresent, Kubernetes' default for a tag
// other than latest) finds them there.
func (c *Cluster) importImages(ctx context.Context, sock string) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	out := filepath.Join(NodeDir, "images")
	if err := os.MkdirAll(out, 0o700); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	for _, im := range []struct{ dir, pkg, tag string }{
		{root, "./cmd/svclab", Image},
		{filepath.Join(root, "tools", "kube", "pause"), ".", PauseImage},
	} {
		bin, err := image.Build(ctx, im.dir, im.pkg, plat, "", out)
		if err != nil {
			return fmt.Errorf("kubetest: image %s: %w", im.tag, err)
		}
		img, err := image.New(bin, image.Options{Platform: plat})
		if err != nil {
			return fmt.Errorf("kubetest: image %s: %w", im.tag, err)
		}
		tar := bin + ".tar"
		if err := image.WriteTarball(img, im.tag, tar); err != nil {
			return fmt.Errorf("kubetest: image %s: %w", im.tag, err)
		}
		if err := ctr(ctx, sock, "images", "import", tar); err != nil {
			return err
		}
		os.Remove(bin)
		os.Remove(tar)
	}
	// Images no registry here serves (the backing services' postgres:16,
	// redis:7), saved elsewhere with `docker save` or `ctr images export`.
	extra, _ := filepath.Glob(filepath.Join(ExtraImagesDir(), "*.tar"))
	for _, tar := range extra {
		if err := ctr(ctx, sock, "images", "import", tar); err != nil {
			return err
		}
	}
	return nil
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
