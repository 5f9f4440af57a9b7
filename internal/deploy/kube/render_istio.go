package kube

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Istio's API versions of the resources svclab renders; their CRDs are
// not in k8s.io/api, so they are unstructured objects.
const (
	IstioSecurityAPI  = "security.istio.io/v1"
	IstioTelemetryAPI = "telemetry.istio.io/v1"
)

// istioObjects map the mesh keys onto Istio, namespace-wide, when
// deploy.sidecar = "istio": deploy.mtls to a STRICT PeerAuthentication
// (plaintext refused, as the local mesh refuses it), deploy.tracing to a
// Telemetry's random sampling percentage (0 samples none, where Istio's
// own default is 1%), and deploy.metrics = false to that Telemetry
// turning every Istio metric off.
func (r *renderer) istioObjects() []Object {
	if !r.istio() {
		return nil
	}
	var out []Object
	d := r.s.Deploy
	if d.MTLS {
		out = append(out, r.unstructured(IstioSecurityAPI, "PeerAuthentication", "default", map[string]any{
			"mtls": map[string]any{"mode": "STRICT"},
		}))
	}
	spec := map[string]any{
		"tracing": []any{map[string]any{"randomSamplingPercentage": d.Tracing * 100}},
	}
	if !d.Metrics {
		spec["metrics"] = []any{map[string]any{
			"overrides": []any{map[string]any{"match": map[string]any{"metric": "ALL_METRICS"}, "disabled": true}},
		}}
	}
	out = append(out, r.unstructured(IstioTelemetryAPI, "Telemetry", "default", spec))
	return out
}

func (r *renderer) unstructured(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(r.ns)
	u.SetLabels(r.labels())
	return u
}
