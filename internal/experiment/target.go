package experiment

import (
	"context"
	"fmt"
	"net/http"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// TargetFor builds what the load generator drives in one run.
//
// A [load] table that names its own request, flow or target is used as
// written, against the deployment's HTTP/JSON gateway when it names no
// target. Otherwise the generator calls the app's own requests on the entry
// component over the run's transport, through the generated stubs' method
// names, so the transport under test carries the client's calls too. With
// the inproc transport nothing crosses a process, so the gateway is used;
// with an ingress (app.ingress), the gateway through it.
//
// Before any load, each request is made once and its answer checked, so
// a variant that answers wrongly fails instead of being measured.
func TargetFor(ctx context.Context, pr *Prepared, dep deploy.Deployment) (*load.Target, error) {
	return targetFor(ctx, pr, dep, nil)
}

// targetFor is TargetFor counting, in sent (when not nil), the calls made
// over the run's transport.
func targetFor(ctx context.Context, pr *Prepared, dep deploy.Deployment, sent *callCounter) (*load.Target, error) {
	cfg := pr.Load
	if cfg.Request != nil || cfg.Flow != nil || cfg.Target != "" {
		if cfg.Target == "" {
			cfg.Target = dep.GatewayURL()
		}
		return load.NewTarget(cfg)
	}
	reqs := pr.Runtime.Requests()
	if len(reqs) == 0 {
		return nil, fmt.Errorf("app %s has no default request; give one in [load.request]", pr.Runtime.App.Name)
	}
	// An ingress (app.ingress) stands in front of the gateway, so the
	// client's calls go through it, as S1's did through NGINX.
	if pr.Runtime.InProcess() || runtime.IngressOf(pr.Runtime) != "" {
		return gatewayTarget(ctx, cfg, dep.GatewayURL(), reqs)
	}
	dopts := transport.DialOptions{Codec: pr.Runtime.HTTPCodec}
	if sent != nil {
		sent.attached = true
		dopts.Interceptors = append(dopts.Interceptors, sent.intercept)
	}
	conn, err := dep.Dial(ctx, dopts)
	if err != nil {
		return nil, fmt.Errorf("entry: %w", err)
	}
	t := &load.Target{Weighted: len(reqs) > 1, Close: conn.Close}
	for _, r := range reqs {
		cctx, cancel := context.WithTimeout(ctx, pr.Runtime.StartTimeout)
		_, err := r.Invoke(cctx, conn)
		cancel()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("first call of %s over %s: %w", r.Name, pr.Runtime.Transport, err)
		}
		msg, newResp := r.Message, r.NewResponse
		t.Ops = append(t.Ops, load.GRPCOp(r.Name, conn, r.Method,
			func(*load.Session) (any, error) { return msg, nil },
			func() any { return newResp() }))
		t.Ops[len(t.Ops)-1].Weight = 1
	}
	return t, nil
}

// gatewayTarget posts each request's JSON to the HTTP/JSON gateway.
func gatewayTarget(ctx context.Context, cfg load.Config, url string, reqs []runtime.Request) (*load.Target, error) {
	cfg, err := gatewayConfig(cfg, url, reqs)
	if err != nil {
		return nil, err
	}
	return load.NewTarget(cfg)
}

// gatewayConfig is cfg with each request's JSON posted to the HTTP/JSON
// gateway at url.
func gatewayConfig(cfg load.Config, url string, reqs []runtime.Request) (load.Config, error) {
	if len(reqs) == 0 {
		return cfg, fmt.Errorf("the app has no default request; give one in [load.request]")
	}
	cfg.Target = url
	cfg.Protocol = "http"
	steps := make([]load.Request, 0, len(reqs))
	for _, r := range reqs {
		steps = append(steps, load.Request{
			Name:         r.Name,
			Method:       http.MethodPost,
			Path:         r.Method,
			Body:         string(r.JSON()),
			Headers:      map[string]string{"Content-Type": "application/json"},
			ExpectStatus: http.StatusOK,
			Weight:       1,
		})
	}
	if len(steps) == 1 {
		cfg.Request = &steps[0]
	} else {
		cfg.Flow = &load.Flow{Order: "weighted", Steps: steps}
	}
	return cfg, nil
}
