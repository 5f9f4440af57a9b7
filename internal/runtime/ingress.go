package runtime

// IngressUser is a Config that asks for an ingress proxy (app.ingress) in
// front of the HTTP/JSON gateway; the deployer runs it and hands clients
// its URL as the gateway's.
type IngressUser interface {
	// IngressName is the proxy to run, e.g. "nginx"; empty for none.
	IngressName() string
}

// IngressOf returns the ingress topo's app asks for, "" for none.
func IngressOf(topo *Topology) string {
	if u, ok := topo.Config.(IngressUser); ok {
		return u.IngressName()
	}
	return ""
}
