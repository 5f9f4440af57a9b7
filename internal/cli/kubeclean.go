package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/spec"
)

// cleanKube deletes the namespaces of kube runs whose svclab died (kill -9,
// a lost machine), through kubeconfig context kctx, and says what it did.
func cleanKube(ctx context.Context, w io.Writer, kctx string) (int, error) {
	removed, foreign, err := kube.Clean(ctx, kctx)
	for _, l := range removed {
		fmt.Fprintf(w, "removed namespace %s (its svclab, %s, is gone)\n", l.Namespace, l.Owner)
	}
	for _, l := range foreign {
		fmt.Fprintf(w, "left namespace %s alone: made from another machine (%s), whose svclab cannot be checked from here\n", l.Namespace, l.Owner)
	}
	if err != nil {
		return len(removed), fmt.Errorf("clean --kube: %w", err)
	}
	return len(removed), nil
}

// resumeKube is `svclab run --resume`'s part for a kube spec: a run killed
// before it deleted its namespace left it; the resumed runs start clean.
func resumeKube(ctx context.Context, w io.Writer, s *spec.Spec) error {
	if s.Deploy.Deployer != kube.Name {
		return nil
	}
	keys, err := kube.KeysOf(s)
	if err != nil {
		return err
	}
	_, err = cleanKube(ctx, w, keys.Context)
	return err
}
