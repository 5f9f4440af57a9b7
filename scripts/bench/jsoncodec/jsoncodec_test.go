// Package jsoncodec benchmarks the http transport's JSON codecs on S3's
// messages against the fastest JSON libraries for Go on the equivalent
// plain struct. It is a module of its own so that the main module does not
// depend on the libraries it is compared with; scripts/bench/json.sh runs
// it and prints the ratios.
package jsoncodec

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/bytedance/sonic"
	gojson "github.com/goccy/go-json"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	selectapp "github.com/svclab/svclab/apps/select"
	"github.com/svclab/svclab/internal/runtime/transport/httptransport/pbjson"
	"github.com/svclab/svclab/proto/selector"
)

// request is selector.SelectRequest as a plain Go struct, with the same
// JSON: lowerCamel names, the int64 as a string, zero values left out.
type request struct {
	Values      []int32 `json:"values,omitempty"`
	SleepMicros int64   `json:"sleepMicros,omitempty,string"`
}

var sizes = []struct {
	name string
	n    int
}{{"StdSize", selectapp.StdSize}, {"LargeSize", selectapp.LargeSize}}

// codec is one library's encode and decode of the request.
type codec struct {
	name string
	// round encodes the request and decodes the result into a fresh value.
	round func(b *testing.B, values []int32)
}

func plain(name string, marshal func(any) ([]byte, error), unmarshal func([]byte, any) error) codec {
	return codec{name, func(b *testing.B, values []int32) {
		in := &request{Values: values}
		for b.Loop() {
			out, err := marshal(in)
			if err != nil {
				b.Fatal(err)
			}
			var back request
			if err := unmarshal(out, &back); err != nil || len(back.Values) != len(values) {
				b.Fatal(err)
			}
		}
	}}
}

func message(name string, marshal func(proto.Message) ([]byte, error), unmarshal func([]byte, proto.Message) error) codec {
	return codec{name, func(b *testing.B, values []int32) {
		in := &selector.SelectRequest{Values: values}
		for b.Loop() {
			out, err := marshal(in)
			if err != nil {
				b.Fatal(err)
			}
			var back selector.SelectRequest
			if err := unmarshal(out, &back); err != nil || len(back.Values) != len(values) {
				b.Fatal(err)
			}
		}
	}}
}

var codecs = []codec{
	message("pbjson", pbjson.Marshal, pbjson.Unmarshal),
	plain("encoding_json", json.Marshal, json.Unmarshal),
	plain("goccy_go-json", gojson.Marshal, gojson.Unmarshal),
	plain("sonic", sonic.Marshal, sonic.Unmarshal),
	message("protojson", protojson.Marshal, protojson.Unmarshal),
}

// BenchmarkRoundTrip is encode plus decode of S3's request, per size and
// library.
func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range sizes {
		values := selectapp.Values(1, size.n)
		for _, c := range codecs {
			b.Run(size.name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(values)))
				c.round(b, values)
			})
		}
	}
}

// TestSameWork: every library writes JSON the others read into the same
// values, so the benchmark compares like with like.
func TestSameWork(t *testing.T) {
	values := selectapp.Values(1, selectapp.StdSize)
	outs := map[string][]byte{}
	var err error
	if outs["pbjson"], err = pbjson.Marshal(&selector.SelectRequest{Values: values}); err != nil {
		t.Fatal(err)
	}
	in := &request{Values: values}
	for name, marshal := range map[string]func(any) ([]byte, error){"encoding_json": json.Marshal, "goccy": gojson.Marshal, "sonic": sonic.Marshal} {
		if outs[name], err = marshal(in); err != nil {
			t.Fatal(err)
		}
	}
	for name, out := range outs {
		var m selector.SelectRequest
		if err := pbjson.Unmarshal(out, &m); err != nil || !slices.Equal(m.Values, values) {
			t.Errorf("pbjson reads %s's output: %v", name, err)
		}
		var r request
		if err := sonic.Unmarshal(out, &r); err != nil || !slices.Equal(r.Values, values) {
			t.Errorf("sonic reads %s's output: %v", name, err)
		}
	}
}
