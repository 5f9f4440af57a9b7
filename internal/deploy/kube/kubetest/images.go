package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/svclab/svclab/internal/image"
)

// pendingImages are images being made for the real node
// (prepareImages).
type pendingImages struct {
	done chan struct{}
	res  nodeImages
}

// wait waits for the images to be made.
func (p *pendingImages) wait() nodeImages {
	<-p.done
	return p.res
}

// nodeImages are the images made for the real node, as tarballs to
// import, or why they could not be made.
type nodeImages struct {
	tars []string
	// postgres is the stand-in postgres image's tag, or "" and
	// noPostgres says why there is none.
	postgres, noPostgres string
	err                  error
}

// prepareImages builds, in the background, svclab's image and the
// sandbox's (tools/kube/pause) as `svclab image --tarball` does, and the
// stand-in for the official postgres image (postgres.go) where this
// machine has PostgreSQL, as tarballs in c.Dir; with sandboxOnly, the
// sandbox's alone. They build while the control plane starts, at once:
// linking svclab is most of it, and the images' layers are compressed
// on the other core. The programs are built in the per-user cache
// (buildDir), where the next start finds them up to date and links
// nothing.
func (c *Cluster) prepareImages(ctx context.Context, sandboxOnly bool) *pendingImages {
	p := &pendingImages{done: make(chan struct{})}
	go func() {
		out := &p.res
		defer close(p.done)
		root, err := moduleRoot(ctx)
		if err != nil {
			out.err = err
			return
		}
		plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
		bins, unlock, err := buildDir()
		if err != nil {
			out.err = err
			return
		}
		defer unlock()
		build := func(name, dir, pkg string) (string, error) {
			outDir := filepath.Join(bins, name)
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return "", fmt.Errorf("kubetest: %w", err)
			}
			return image.Build(ctx, filepath.Join(root, dir), pkg, plat, "", outDir)
		}
		// The sandbox's binary is /pause, so that the pods' sandboxes
		// read as pause in ps, not as svclab.
		makers := []imageMaker{{PauseImage, func() (v1.Image, error) {
			bin, err := build("pause", filepath.Join("tools", "kube", "pause"), ".")
			if err != nil {
				return nil, err
			}
			return image.FromFiles([]image.File{{Path: "/pause", Src: bin, Mode: 0o755}},
				image.Config{Entrypoint: []string{"/pause"}, User: image.NonRoot, WorkingDir: "/"},
				image.Options{Platform: plat})
		}}}
		if sandboxOnly {
			out.noPostgres = "no stand-in for the postgres image: the node was started with kubetest.Options.SandboxImageOnly"
		} else {
			// svclab and the host binary beside it, as `svclab image`
			// builds them: the pods' `svclab host` hands over to it.
			makers = append(makers, imageMaker{Image, func() (v1.Image, error) {
				bin, err := build("svclab", ".", "./cmd/svclab")
				if err != nil {
					return nil, err
				}
				host, err := build("svclab", ".", "./cmd/svclab-host")
				if err != nil {
					return nil, err
				}
				return image.New(bin, image.Options{Platform: plat, Host: host})
			}})
			if in, err := findPostgres(ctx); err != nil {
				out.noPostgres = "no stand-in for the postgres image: " + err.Error()
			} else {
				out.postgres = in.tag()
				makers = append(makers, imageMaker{out.postgres, func() (v1.Image, error) {
					entry, err := build("postgres-entrypoint", filepath.Join("tools", "kube", "postgres"), ".")
					if err != nil {
						return nil, err
					}
					return postgresImage(ctx, in, entry, plat)
				}})
			}
		}
		out.tars = make([]string, len(makers))
		errs := make([]error, len(makers))
		var wg sync.WaitGroup
		for i, m := range makers {
			wg.Go(func() {
				img, err := m.make()
				if err == nil {
					out.tars[i] = filepath.Join(c.Dir, fmt.Sprintf("image-%d.tar", i))
					err = image.WriteTarball(img, m.tag, out.tars[i])
				}
				if err != nil {
					errs[i] = fmt.Errorf("kubetest: image %s: %w", m.tag, err)
				}
			})
		}
		wg.Wait()
		out.err = errors.Join(errs...)
	}()
	return p
}

// imageMaker makes the image of tag.
type imageMaker struct {
	tag  string
	make func() (v1.Image, error)
}

// buildDir is where the node's programs are built:
// ${XDG_CACHE_HOME:-~/.cache}/svclab/kubetest-build, locked against
// another harness's build until unlock.
func buildDir() (dir string, unlock func(), err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", nil, fmt.Errorf("kubetest: no cache directory for the node's programs: %w", err)
	}
	dir = filepath.Join(cache, "svclab", "kubetest-build")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("kubetest: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("kubetest: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return "", nil, fmt.Errorf("kubetest: lock %s: %w", f.Name(), err)
	}
	return dir, func() { f.Close() }, nil
}

// importImages imports the images prepareImages made into the node's
// containerd, in the namespace the CRI uses, and the archives of
// ExtraImagesDir: no registry is involved, and the pods'
// imagePullPolicy (IfNotPresent, Kubernetes' default for a tag other
// than latest) finds them there.
func (c *Cluster) importImages(ctx context.Context, sock string, images nodeImages, sandboxOnly bool) error {
	if images.err != nil {
		return images.err
	}
	for _, tar := range images.tars {
		if err := ctr(ctx, sock, "images", "import", tar); err != nil {
			return err
		}
		os.Remove(tar)
	}
	c.PostgresImage, c.NoPostgres = images.postgres, images.noPostgres
	if sandboxOnly {
		return nil
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
