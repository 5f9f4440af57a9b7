package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"

	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/image"
	"github.com/svclab/svclab/internal/tempdir"
)

// modulePath is the svclab module, which `svclab image` builds from source.
const modulePath = "github.com/svclab/svclab"

func init() { rootCmd.AddCommand(newImageCmd()) }

func newImageCmd() *cobra.Command {
	var push, tarballPath, tag, platform, source, binary, host string
	cmd := &cobra.Command{
		Use:   "image (--push REF | --tarball FILE)",
		Short: "Build an OCI image of svclab, for the kube deployer",
		Long: `image builds a static svclab binary (CGO_ENABLED=0) from the source tree and
puts it in an OCI image of one layer, with no base image and no container
daemon (go-containerregistry, as ko does). The binary is the entrypoint,
/svclab; beside it, /svclab-host is the lean host binary (cmd/svclab-host),
which the pods' "svclab host" hands over to. With --binary FILE, FILE-host
goes beside it when it was built from the same source. The image runs as
user 65532 and is labelled with the version and commit. The same binaries
give the same image digest.

--push writes it to a registry, with the credentials of ~/.docker/config.json
and its helpers (docker login, gcloud, ecr, ...), and prints the reference by
digest to put in [deploy.kube] image. --tarball writes it to a file instead,
for docker load, podman load or kind load image-archive.`,
		Example: `  svclab image --push registry.example.com/team/svclab:v0.3
  svclab image --tarball svclab.tar --tag svclab:dev
  svclab image --push ghcr.io/me/svclab:arm --platform linux/arm64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (push == "") == (tarballPath == "") {
				return usageError{errors.New("give one of --push REF and --tarball FILE")}
			}
			plat, err := v1.ParsePlatform(platform)
			if err != nil || plat.OS != "linux" || plat.Architecture == "" {
				return usageError{fmt.Errorf("--platform %q: want linux/ARCH, e.g. linux/amd64", platform)}
			}
			w := cmd.ErrOrStderr()
			if binary == "" {
				if err := checkSource(source); err != nil {
					return err
				}
				out, err := tempdir.MkdirTemp("image-")
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "building a static svclab %s and its host binary for %s from %s\n", version, plat, source)
				ldflags := fmt.Sprintf("-X %[1]s.version=%[2]s -X %[1]s.commit=%[3]s", versionPackage, version, commit)
				if binary, err = image.Build(cmd.Context(), source, "./cmd/svclab", *plat, ldflags, out); err != nil {
					return err
				}
				if host, err = image.Build(cmd.Context(), source, "./cmd/svclab-host", *plat, "", out); err != nil {
					return err
				}
			} else if lean, ok := hostentry.Lean(binary); ok {
				host = lean
			}
			img, err := image.New(binary, image.Options{
				Host:     host,
				Platform: *plat,
				Labels: map[string]string{
					"org.opencontainers.image.title":    "svclab",
					"org.opencontainers.image.version":  version,
					"org.opencontainers.image.revision": commit,
				},
			})
			if err != nil {
				return err
			}
			if tarballPath != "" {
				if tag == "" {
					tag = defaultImageTag()
				}
				if err := image.WriteTarball(img, tag, tarballPath); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s)\n", tarballPath, tag)
				return nil
			}
			fmt.Fprintf(w, "pushing %s\n", push)
			pinned, err := image.Push(cmd.Context(), img, push)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), pinned)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&push, "push", "", "push the image to this registry reference")
	f.StringVar(&tarballPath, "tarball", "", "write the image to this tarball instead of a registry")
	f.StringVar(&tag, "tag", "", "the tag the tarball names (default svclab:VERSION)")
	f.StringVar(&platform, "platform", "linux/"+runtime.GOARCH, "the platform to build for, linux/ARCH")
	f.StringVar(&source, "source", ".", "the svclab source tree to build")
	f.StringVar(&binary, "binary", "", "put this static binary in the image instead of building one")
	return cmd
}

// checkSource says clearly when dir is not svclab's source tree, before a
// build fails in a less readable way.
func checkSource(dir string) error {
	gomod := filepath.Join(dir, "go.mod")
	b, err := os.ReadFile(gomod)
	if err != nil {
		return usageError{fmt.Errorf("--source %s: %w; run from svclab's source tree or pass --source or --binary", dir, err)}
	}
	if m := modfile.ModulePath(b); m != modulePath {
		return usageError{fmt.Errorf("--source %s: %s is module %q, not %s", dir, gomod, m, modulePath)}
	}
	return nil
}

// sanitizeTag makes a version usable as a tag (git describe's "+dirty" and
// such have characters a tag may not).
func sanitizeTag(v string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, v)
}
