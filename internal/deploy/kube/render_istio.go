package kube

// istioObjects are Istio's resources for the mesh keys (filled below).
func (r *renderer) istioObjects() []Object { return nil }
