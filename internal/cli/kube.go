package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/runtime"
)

func init() {
	rootCmd.AddCommand(newKubeCmd())
	// Pods run, unless deploy.kube.image says otherwise, the image that
	// `svclab image --tarball` builds of this very version.
	kube.DefaultImage = defaultImageTag()
}

func newKubeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "kube",
		Short: "Kubernetes: the manifests of a spec's design points",
	}
	c.AddCommand(newKubeRenderCmd())
	return c
}

func newKubeRenderCmd() *cobra.Command {
	var sets []string
	var point int
	c := &cobra.Command{
		Use:   "render SPEC",
		Short: "Print one design point's Kubernetes manifests as YAML, without a cluster",
		Long: `render prints the objects the kube deployer applies for one design point of
SPEC, as multi-document YAML, for review or GitOps: the namespace, the hosts'
configs, a Deployment per placement group, a Service per exposed component,
a HorizontalPodAutoscaler per [deploy.autoscale] group, Istio's resources
when deploy.sidecar = "istio", and the load generator's indexed Job. The
spec is read as if deploy.deployer were "kube". A comment header names the
design point's factor levels and what the cluster does not do as the local
deployer would. See docs/KUBERNETES.md.`,
		Example: `  svclab kube render experiments/s1-hpa.toml
  svclab kube render experiments/s1-hpa.toml --point 9
  svclab kube render experiments/s2-mesh.toml --set deploy.sidecar=istio --set deploy.kube.image=registry.example/svclab:v1 | kubectl apply -f -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return kubeRender(cmd, args[0], sets, point, cmd.OutOrStdout())
		},
	}
	addSetFlag(c, &sets)
	c.Flags().IntVar(&point, "point", 1, "the design point to render, from 1, in the order of svclab plan's design")
	return c
}

func kubeRender(cmd *cobra.Command, path string, sets []string, point int, w io.Writer) error {
	s, err := loadDesignSpec(cmd.Context(), path, append([]string{"deploy.deployer=" + kube.Name}, sets...), false)
	if err != nil {
		return err
	}
	d, err := experiment.NewDesign(cmd.Context(), s)
	if err != nil {
		return err
	}
	if point < 1 || point > len(d.Points) {
		return usageError{fmt.Errorf("--point %d: %s has design points 1 to %d", point, path, len(d.Points))}
	}
	pt := d.Points[point-1]
	rs, err := s.With(d.Levels(pt))
	if err != nil {
		return err
	}
	topo, err := runtime.Resolve(rs)
	if err != nil {
		return err
	}
	objs, err := kube.Render(rs, topo, kube.RenderOptions{})
	if err != nil {
		return err
	}
	y, err := kube.YAML(objs)
	if err != nil {
		return err
	}
	var h strings.Builder
	fmt.Fprintf(&h, "# svclab kube render %s: design point %d of %d\n", path, point, len(d.Points))
	if len(pt) > 0 {
		fmt.Fprintf(&h, "# levels: %s\n", d.Describe(pt))
	}
	for _, n := range kube.Notes(rs, topo) {
		fmt.Fprintf(&h, "# note: %s\n", n)
	}
	if _, err := io.WriteString(w, h.String()); err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}
