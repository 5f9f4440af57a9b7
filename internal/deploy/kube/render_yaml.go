package kube

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/yaml"
)

// YAML writes objs as one multi-document YAML stream, in order, as
// `kubectl apply -f` and GitOps tools read it.
func YAML(objs []Object) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}
