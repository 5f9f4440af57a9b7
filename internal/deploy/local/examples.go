package local

import (
	"fmt"
	"os"
	"path/filepath"
)

// CurlExamples are commands that call the entry through the gateway, one
// per default request of the app. A body too long to paste (select's large
// array, the movie) is written to a file in the deployment's temp dir,
// which exists while the deployment runs.
func (d *Deployment) CurlExamples() []string {
	var out []string
	for _, r := range d.topo.Requests() {
		body := r.JSON()
		data := "'" + string(body) + "'"
		if len(body) > 120 {
			f := filepath.Join(d.dir, r.Name+".json")
			if err := os.WriteFile(f, body, 0o644); err == nil {
				data = "@" + f
			}
		}
		out = append(out, fmt.Sprintf("curl -s -H 'Content-Type: application/json' --data %s %s%s", data, d.gatewayURL, r.Method))
	}
	return out
}
