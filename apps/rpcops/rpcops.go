// Package rpcops is the rpcops reference app (S4): the operations the gRPC
// vs net/rpc study timed — void, long, eight longs, string → string and a
// Movie struct returned with its sent flag set.
//
// The app has two components. "frontend" is the entry and forwards every
// call to "ops", which does the work, so in a split placement the RPC under
// test runs between two svclab processes over the configured transport.
package rpcops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	opspb "github.com/svclab/svclab/proto/rpcops"

	"github.com/svclab/svclab/svc"
)

// Name is the app.name of this app.
const Name = "rpcops"

// Operations, as app.op names them. All asks for one request of each.
const (
	OpVoid       = "void"
	OpLong       = "long"
	OpEightLongs = "eightlongs"
	OpString     = "string"
	OpMovie      = "movie"
	OpAll        = "all"
)

// Ops lists the operations in the study's order.
var Ops = []string{OpVoid, OpLong, OpEightLongs, OpString, OpMovie}

// String lengths S4 used: 2, 4, ..., 1024.
const (
	MinStringLen = 2
	MaxStringLen = 1024
)

// Component names.
const (
	Frontend = "frontend"
	OpsComp  = "ops"
)

func init() {
	svc.Register(&svc.App{
		Name:      Name,
		Summary:   "void, long, eight longs, string and Movie RPCs (S4)",
		NewConfig: func() svc.Config { return &Config{Op: OpAll, StringLen: 16} },
	})
}

// Config is the [app] table of an rpcops spec.
type Config struct {
	// Op selects the default request: one of Ops, or "all" for one request
	// of each.
	Op string `toml:"op" json:"op"`
	// StringLen is the length of the string operation's argument.
	StringLen int `toml:"string_len" json:"string_len"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.Op != OpAll && !slices.Contains(Ops, c.Op) {
		errs = append(errs, svc.KeyErrorf("op", "must be one of %s or %q, got %q", strings.Join(Ops, ", "), OpAll, c.Op))
	}
	if c.StringLen < MinStringLen || c.StringLen > MaxStringLen {
		errs = append(errs, svc.KeyErrorf("string_len", "must be between %d and %d, got %d", MinStringLen, MaxStringLen, c.StringLen))
	}
	return errors.Join(errs...)
}

// Entry is the frontend.
func (c *Config) Entry() string { return Frontend }

// Components are the frontend and the ops server it forwards to.
func (c *Config) Components() []svc.Component {
	return []svc.Component{
		{
			Name:    Frontend,
			Service: &opspb.Frontend_ServiceDesc,
			Deps:    []string{OpsComp},
			New: func(_ context.Context, deps svc.Deps) (any, error) {
				return &frontend{next: opspb.NewOpsClient(deps.Conn(OpsComp))}, nil
			},
		},
		{
			Name:    OpsComp,
			Service: &opspb.Ops_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) {
				return &ops{}, nil
			},
		},
	}
}

// Requests returns the request of the configured operation, or one of each
// for "all".
func (c *Config) Requests() []svc.Request {
	var out []svc.Request
	for _, op := range Ops {
		if c.Op == OpAll || c.Op == op {
			out = append(out, Request(op, c.StringLen))
		}
	}
	return out
}

// Request returns the default request of op (one of Ops), with strings of
// stringLen characters.
func Request(op string, stringLen int) svc.Request {
	switch op {
	case OpVoid:
		return svc.Request{
			Name: op, Method: opspb.Frontend_Void_FullMethodName,
			Message:     &opspb.VoidRequest{},
			NewResponse: func() proto.Message { return new(opspb.VoidResponse) },
		}
	case OpLong:
		return svc.Request{
			Name: op, Method: opspb.Frontend_Long_FullMethodName,
			Message:     &opspb.LongRequest{Value: 42},
			NewResponse: func() proto.Message { return new(opspb.LongResponse) },
			Check:       wantLong(43),
		}
	case OpEightLongs:
		return svc.Request{
			Name: op, Method: opspb.Frontend_EightLongs_FullMethodName,
			Message:     &opspb.EightLongsRequest{V1: 1, V2: 2, V3: 3, V4: 4, V5: 5, V6: 6, V7: 7, V8: 8},
			NewResponse: func() proto.Message { return new(opspb.LongResponse) },
			Check:       wantLong(36),
		}
	case OpString:
		s := Text(stringLen)
		return svc.Request{
			Name: op, Method: opspb.Frontend_String_FullMethodName,
			Message:     &opspb.StringRequest{Value: s},
			NewResponse: func() proto.Message { return new(opspb.StringResponse) },
			Check: func(m proto.Message) error {
				if got := m.(*opspb.StringResponse).GetValue(); got != s {
					return fmt.Errorf("string of %d characters, want the %d sent", len(got), len(s))
				}
				return nil
			},
		}
	case OpMovie:
		want := SampleMovie()
		want.Sent = true
		return svc.Request{
			Name: op, Method: opspb.Frontend_Movie_FullMethodName,
			Message:     &opspb.MovieRequest{Movie: SampleMovie()},
			NewResponse: func() proto.Message { return new(opspb.MovieResponse) },
			Check: func(m proto.Message) error {
				if got := m.(*opspb.MovieResponse).GetMovie(); !proto.Equal(got, want) {
					return fmt.Errorf("movie %v, want %v", got, want)
				}
				return nil
			},
		}
	}
	panic("rpcops: unknown operation " + op)
}

func wantLong(v int64) func(proto.Message) error {
	return func(m proto.Message) error {
		if got := m.(*opspb.LongResponse).GetValue(); got != v {
			return fmt.Errorf("value %d, want %d", got, v)
		}
		return nil
	}
}

// Text returns n ASCII characters of a fixed pattern.
func Text(n int) string {
	const pattern = "The quick brown fox jumps over the lazy dog. "
	return strings.Repeat(pattern, n/len(pattern)+1)[:n]
}

// SampleMovie is the Movie of the default request: four actors with one or
// two characters each, as a film record of the study's shape.
func SampleMovie() *opspb.Movie {
	return &opspb.Movie{
		Id: 1, Title: "The Grand Budapest Hotel", Genre: "Comedy", Director: "Wes Anderson",
		DurationMinutes: 99,
		Actors: []*opspb.Actor{
			{Id: 1, Name: "Ralph", Surname: "Fiennes", CharacterNames: []string{"M. Gustave"}},
			{Id: 2, Name: "Tony", Surname: "Revolori", CharacterNames: []string{"Zero Moustafa"}},
			{Id: 3, Name: "F. Murray", Surname: "Abraham", CharacterNames: []string{"Mr. Moustafa", "Narrator"}},
			{Id: 4, Name: "Saoirse", Surname: "Ronan", CharacterNames: []string{"Agatha"}},
		},
	}
}

// frontend forwards every operation to the ops component.
type frontend struct {
	opspb.UnimplementedFrontendServer
	next opspb.OpsClient
}

func (f *frontend) Void(ctx context.Context, in *opspb.VoidRequest) (*opspb.VoidResponse, error) {
	return f.next.Void(ctx, in)
}

func (f *frontend) Long(ctx context.Context, in *opspb.LongRequest) (*opspb.LongResponse, error) {
	return f.next.Long(ctx, in)
}

func (f *frontend) EightLongs(ctx context.Context, in *opspb.EightLongsRequest) (*opspb.LongResponse, error) {
	return f.next.EightLongs(ctx, in)
}

func (f *frontend) String(ctx context.Context, in *opspb.StringRequest) (*opspb.StringResponse, error) {
	return f.next.String(ctx, in)
}

func (f *frontend) Movie(ctx context.Context, in *opspb.MovieRequest) (*opspb.MovieResponse, error) {
	return f.next.Movie(ctx, in)
}

// ops does the work.
type ops struct {
	opspb.UnimplementedOpsServer
}

func (ops) Void(ctx context.Context, in *opspb.VoidRequest) (*opspb.VoidResponse, error) {
	if err := svc.Sleep(ctx, OpsComp, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	return &opspb.VoidResponse{}, nil
}

func (ops) Long(ctx context.Context, in *opspb.LongRequest) (*opspb.LongResponse, error) {
	if err := svc.Sleep(ctx, OpsComp, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	return &opspb.LongResponse{Value: in.GetValue() + 1}, nil
}

func (ops) EightLongs(ctx context.Context, in *opspb.EightLongsRequest) (*opspb.LongResponse, error) {
	if err := svc.Sleep(ctx, OpsComp, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	sum := in.GetV1() + in.GetV2() + in.GetV3() + in.GetV4() + in.GetV5() + in.GetV6() + in.GetV7() + in.GetV8()
	return &opspb.LongResponse{Value: sum}, nil
}

func (ops) String(ctx context.Context, in *opspb.StringRequest) (*opspb.StringResponse, error) {
	if err := svc.Sleep(ctx, OpsComp, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	return &opspb.StringResponse{Value: in.GetValue()}, nil
}

func (ops) Movie(ctx context.Context, in *opspb.MovieRequest) (*opspb.MovieResponse, error) {
	if err := svc.Sleep(ctx, OpsComp, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	// Clone so that, over inproc where no serialisation copies the message,
	// the caller's movie is not changed under it.
	m := proto.Clone(in.GetMovie()).(*opspb.Movie)
	if m == nil {
		m = &opspb.Movie{}
	}
	m.Sent = true
	return &opspb.MovieResponse{Movie: m}, nil
}
