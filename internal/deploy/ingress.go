package deploy

import (
	"github.com/svclab/svclab/internal/deploy/ingress/nginx"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// checkIngress refuses, before anything starts, an ingress (app.ingress)
// that cannot run here.
func checkIngress(s *spec.Spec, topo *runtime.Topology) error {
	switch name := runtime.IngressOf(topo); name {
	case "":
		return nil
	case nginx.Name:
		if _, err := nginx.Find(); err != nil {
			return s.Errorf("app.ingress", "%w", err)
		}
		return nil
	default:
		return s.Errorf("app.ingress", "unknown ingress %q (known: %s)", name, nginx.Name)
	}
}
