package runtime

import "net/http"

// WebHandler is an entry component that also serves pages of its own over
// HTTP, as Online Boutique's frontend does: the host mounts it on the
// HTTP/JSON gateway, where it answers every path that is not a method's
// route (POST /<package.Service>/<Method>).
type WebHandler interface {
	http.Handler
}

// web returns impl's pages behind the host's drain gate, so a draining
// host refuses them as it refuses calls, or nil when impl serves none.
func (h *host) web(impl any) http.Handler {
	wh, ok := impl.(WebHandler)
	if !ok {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.calls.Enter() {
			http.Error(w, "group "+h.cfg.GetGroup()+" is draining", http.StatusServiceUnavailable)
			return
		}
		defer h.calls.Leave()
		h.served.Add(1)
		wh.ServeHTTP(w, r)
	})
}
