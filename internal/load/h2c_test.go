package load

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestH2C(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "want HTTP/2", http.StatusHTTPVersionNotSupported)
			return
		}
		w.Write([]byte("ok"))
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	res := run(t, Config{Target: srv.URL, Protocol: "h2c", Mode: "closed", Users: 4, Requests: 200, Connections: 2}, Options{})
	if tot := mustOp(t, res, "total"); tot.Count != 200 || tot.Errors != 0 {
		t.Fatalf("h2c: %+v", tot)
	}
}
