package httptransport_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/runtime/transport"
)

// TestWebFallback: with ServerOptions.Web, a path that is no method's
// route goes to the web handler, and the method routes stay the
// transport's; without it, such a path is an unknown method.
func TestWebFallback(t *testing.T) {
	web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<p>page "+r.Method+" "+r.URL.Path+"</p>")
	})
	with := serveWith(t, transport.ServerOptions{Web: web})
	without := serve(t)
	for _, c := range []struct {
		name, base, method, path, body string
		code                           int
		want                           string
	}{
		{"page", with, "GET", "/product/X", "", 200, "<p>page GET /product/X</p>"},
		{"form post", with, "POST", "/cart", "product_id=X", 200, "<p>page POST /cart</p>"},
		{"method route", with, "POST", "/svclab.echo.Echo/Echo", `{"payload":"aGk="}`, 200, `"payload":"aGk="`},
		{"wrong verb on a method route", with, "GET", "/svclab.echo.Echo/Echo", "", 405, `"code":12`},
		{"no web handler", without, "GET", "/product/X", "", 404, `"code":12`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, c.base+c.path, strings.NewReader(c.body))
			if strings.HasPrefix(c.body, "{") {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code || !strings.Contains(string(b), c.want) {
				t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, resp.StatusCode, b, c.code, c.want)
			}
		})
	}
}
