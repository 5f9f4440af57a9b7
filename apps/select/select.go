// Package selectapp is the select reference app (S3), app.name "select": a
// service receives an array of int32 and returns three elements at random
// positions, so the whole array must be decoded.
//
// The app has two components. "frontend" is the entry: it takes the
// client's request and forwards it to "selector", which does the work. In
// the monolith the forward is an inproc call and the transport under test is
// the one between the client and the frontend, as in the study; in "split"
// the array crosses the transport a second time, between the two processes.
package selectapp

import (
	"context"
	"fmt"
	"math/rand/v2"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	selectorpb "github.com/svclab/svclab/proto/selector"

	"github.com/svclab/svclab/svc"
)

// Name is the app.name of this app.
const Name = "select"

// Array sizes, as S3 defined them, and the range of the values.
const (
	Std       = "std"
	Large     = "large"
	StdSize   = 200
	LargeSize = 204_800
	MaxValue  = 1000
	// Picks is how many elements a call returns.
	Picks = 3
)

// Component names.
const (
	Frontend = "frontend"
	Selector = "selector"
)

func init() {
	svc.Register(&svc.App{
		Name:      Name,
		Summary:   "decode an int32 array, return three elements at random positions (S3)",
		NewConfig: func() svc.Config { return &Config{Size: Std, Seed: 1} },
	})
}

// Config is the [app] table of a select spec.
type Config struct {
	// Size is the array of the default request: "std" (200 ints) or
	// "large" (204,800 ints).
	Size string `toml:"size" json:"size"`
	// Seed generates the default request's values, in 0..1000.
	Seed int64 `toml:"seed" json:"seed"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	if c.Size != Std && c.Size != Large {
		return svc.KeyErrorf("size", "must be %q or %q, got %q", Std, Large, c.Size)
	}
	return nil
}

// Entry is the frontend.
func (c *Config) Entry() string { return Frontend }

// Components are the frontend and the selector it forwards to.
func (c *Config) Components() []svc.Component {
	return []svc.Component{
		{
			Name:    Frontend,
			Service: &selectorpb.Frontend_ServiceDesc,
			Deps:    []string{Selector},
			New: func(_ context.Context, deps svc.Deps) (any, error) {
				return &frontend{next: selectorpb.NewSelectorClient(deps.Conn(Selector))}, nil
			},
		},
		{
			Name:    Selector,
			Service: &selectorpb.Selector_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) {
				return &selector{}, nil
			},
		},
	}
}

// Values returns n values in 0..MaxValue drawn from seed.
func Values(seed int64, n int) []int32 {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5e1ec7))
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(r.IntN(MaxValue + 1))
	}
	return v
}

// Requests is one Frontend.Select call with the configured array.
func (c *Config) Requests() []svc.Request {
	n := StdSize
	if c.Size == Large {
		n = LargeSize
	}
	req := &selectorpb.SelectRequest{Values: Values(c.Seed, n)}
	return []svc.Request{{
		Name:        "select",
		Method:      selectorpb.Frontend_Select_FullMethodName,
		Message:     req,
		NewResponse: func() proto.Message { return new(selectorpb.SelectResponse) },
		Check: func(m proto.Message) error {
			return Check(req, m.(*selectorpb.SelectResponse))
		},
	}}
}

// Check reports whether resp is a correct answer to req: three elements,
// each at the position it names.
func Check(req *selectorpb.SelectRequest, resp *selectorpb.SelectResponse) error {
	vals, pos := resp.GetValues(), resp.GetPositions()
	if len(vals) != Picks || len(pos) != Picks {
		return fmt.Errorf("got %d values at %d positions, want %d of each", len(vals), len(pos), Picks)
	}
	for i, p := range pos {
		if p < 0 || int(p) >= len(req.GetValues()) {
			return fmt.Errorf("position %d out of range [0,%d)", p, len(req.GetValues()))
		}
		if req.GetValues()[p] != vals[i] {
			return fmt.Errorf("value %d at position %d, but the request has %d there", vals[i], p, req.GetValues()[p])
		}
	}
	return nil
}

// frontend forwards to the selector.
type frontend struct {
	selectorpb.UnimplementedFrontendServer
	next selectorpb.SelectorClient
}

func (f *frontend) Select(ctx context.Context, in *selectorpb.SelectRequest) (*selectorpb.SelectResponse, error) {
	return f.next.Select(ctx, in)
}

// selector picks the elements.
type selector struct {
	selectorpb.UnimplementedSelectorServer
}

func (s *selector) Select(ctx context.Context, in *selectorpb.SelectRequest) (*selectorpb.SelectResponse, error) {
	if err := svc.Sleep(ctx, Selector, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	v := in.GetValues()
	if len(v) == 0 {
		return nil, status.Error(codes.InvalidArgument, "selector: values is empty")
	}
	resp := &selectorpb.SelectResponse{Values: make([]int32, Picks), Positions: make([]int32, Picks)}
	for i := range Picks {
		p := rand.IntN(len(v))
		resp.Positions[i] = int32(p)
		resp.Values[i] = v[p]
	}
	return resp, nil
}
