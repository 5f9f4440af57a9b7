// Package chain is the chain reference app (S2): N hops of one service, hop1
// calling hop2 and so on, each returning the text it got from downstream
// followed by its own. The payload is each hop's own text: small (100
// bytes) or large (300,000 characters), so a large response grows by that
// much at every hop on its way back to the client.
package chain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	chainpb "github.com/svclab/svclab/proto/chain"

	"github.com/svclab/svclab/svc"
)

// Name is the app.name of this app.
const Name = "chain"

// Payload classes and the size of one hop's own text in each.
const (
	Small     = "small"
	Large     = "large"
	SmallSize = 100
	LargeSize = 300_000
	// MaxHops bounds app.hops; a large payload at 64 hops is 19 MB, which
	// is as far as a laboratory chain needs to go.
	MaxHops = 64
)

func init() {
	svc.Register(&svc.App{
		Name:      Name,
		Summary:   "N hops of one service; each returns the downstream text followed by its own (S2)",
		NewConfig: func() svc.Config { return &Config{Hops: 3, Payload: Small} },
	})
}

// Config is the [app] table of a chain spec.
type Config struct {
	// Hops is the number of hops, hop1 (the entry) to hopN.
	Hops int `toml:"hops" json:"hops"`
	// Payload is the default payload class, "small" or "large"; a request
	// may choose its own.
	Payload string `toml:"payload" json:"payload"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.Hops < 1 || c.Hops > MaxHops {
		errs = append(errs, svc.KeyErrorf("hops", "must be between 1 and %d, got %d", MaxHops, c.Hops))
	}
	if c.Payload != Small && c.Payload != Large {
		errs = append(errs, svc.KeyErrorf("payload", "must be %q or %q, got %q", Small, Large, c.Payload))
	}
	return errors.Join(errs...)
}

// HopName is the component name of hop i (1-based).
func HopName(i int) string { return fmt.Sprintf("hop%d", i) }

// Entry is hop1.
func (c *Config) Entry() string { return HopName(1) }

// Components are hop1..hopN, each depending on the next.
func (c *Config) Components() []svc.Component {
	comps := make([]svc.Component, 0, c.Hops)
	for i := 1; i <= c.Hops; i++ {
		comp := svc.Component{Name: HopName(i), Service: &chainpb.Hop_ServiceDesc}
		if i < c.Hops {
			comp.Deps = []string{HopName(i + 1)}
		}
		comp.New = func(_ context.Context, deps svc.Deps) (any, error) {
			h := &hop{name: HopName(i), payload: c.Payload, own: map[string]string{
				Small: HopText(i, Small), Large: HopText(i, Large),
			}}
			if i < c.Hops {
				h.next = chainpb.NewHopClient(deps.Conn(HopName(i + 1)))
			}
			return h, nil
		}
		comps = append(comps, comp)
	}
	return comps
}

// Requests is one call of hop1 with the configured payload.
func (c *Config) Requests() []svc.Request {
	want := Expected(c.Hops, c.Payload)
	return []svc.Request{{
		Name:        "call",
		Method:      chainpb.Hop_Call_FullMethodName,
		Message:     &chainpb.CallRequest{Payload: c.Payload},
		NewResponse: func() proto.Message { return new(chainpb.CallResponse) },
		Check: func(m proto.Message) error {
			got := m.(*chainpb.CallResponse).GetText()
			if got != want {
				return fmt.Errorf("text of %d bytes starting %.40q, want %d bytes starting %.40q", len(got), got, len(want), want)
			}
			return nil
		},
	}}
}

// HopText is hop i's own text for a payload class: a "[hopI]" tag padded
// to the class's size with a fixed pattern.
func HopText(i int, payload string) string {
	size := SmallSize
	if payload == Large {
		size = LargeSize
	}
	var b strings.Builder
	b.Grow(size)
	fmt.Fprintf(&b, "[hop%d]", i)
	const pattern = "abcdefghijklmnopqrstuvwxyz0123456789"
	for b.Len() < size {
		n := min(size-b.Len(), len(pattern))
		b.WriteString(pattern[:n])
	}
	return b.String()
}

// Expected is the text hop1 answers with: hopN's text first, hop1's last.
func Expected(hops int, payload string) string {
	var b strings.Builder
	for i := hops; i >= 1; i-- {
		b.WriteString(HopText(i, payload))
	}
	return b.String()
}

// hop is one hop of the chain.
type hop struct {
	chainpb.UnimplementedHopServer
	name    string
	payload string            // default class
	own     map[string]string // class → this hop's text
	next    chainpb.HopClient // nil at the last hop
}

// Call returns the downstream text followed by this hop's own.
func (h *hop) Call(ctx context.Context, in *chainpb.CallRequest) (*chainpb.CallResponse, error) {
	class := in.GetPayload()
	if class == "" {
		class = h.payload
	}
	own, ok := h.own[class]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "%s: payload must be %q or %q, got %q", h.name, Small, Large, class)
	}
	if h.next == nil {
		if err := svc.Sleep(ctx, h.name, in.GetSleepMicros()); err != nil {
			return nil, err
		}
		return &chainpb.CallResponse{Text: own}, nil
	}
	// A response of several large payloads exceeds grpc-go's default 4 MB
	// limit; a chain that long is asked for on purpose, so lift it.
	down, err := h.next.Call(ctx, in, grpc.MaxCallRecvMsgSize(1<<30))
	if err != nil {
		// The status is returned unchanged so the client sees the code the
		// failing hop chose (DeadlineExceeded, InvalidArgument, ...).
		return nil, err
	}
	return &chainpb.CallResponse{Text: down.GetText() + own}, nil
}
