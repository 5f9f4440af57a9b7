package kube

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/yaml"
)

// YAML writes objs as one multi-document YAML stream, in order, as
// `kubectl apply -f` and GitOps tools read it. Each object is written as
// it is applied (toUnstructured): without the status and creation time
// the Go types carry empty, which a reader would take for the cluster's
// state and which no one should commit to a GitOps repository.
func YAML(objs []Object) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		what := fmt.Sprintf("%s %s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
		u, err := toUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", what, err)
		}
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", what, err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}
