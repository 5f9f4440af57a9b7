package pbjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/svclab/svclab/internal/runtime/transport/httptransport/pbjson"
	"github.com/svclab/svclab/proto/chain"
	"github.com/svclab/svclab/proto/echo"
	"github.com/svclab/svclab/proto/kinds"
	"github.com/svclab/svclab/proto/rpcops"
	"github.com/svclab/svclab/proto/selector"
)

// files are the project's .proto files whose messages must all have
// generated code: every app's, and the test file with every field kind.
var files = []protoreflect.FileDescriptor{
	chain.File_chain_chain_proto,
	echo.File_echo_echo_proto,
	kinds.File_kinds_kinds_proto,
	rpcops.File_rpcops_rpcops_proto,
	selector.File_selector_selector_proto,
}

// messageTypes lists every message of files, nested ones included, less
// map entries.
func messageTypes(t *testing.T) []protoreflect.MessageType {
	t.Helper()
	var out []protoreflect.MessageType
	var add func(protoreflect.MessageDescriptors)
	add = func(mds protoreflect.MessageDescriptors) {
		for i := range mds.Len() {
			md := mds.Get(i)
			if md.IsMapEntry() {
				continue
			}
			mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, mt)
			add(md.Messages())
		}
	}
	for _, fd := range files {
		add(fd.Messages())
	}
	return out
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return out.Bytes()
}

// TestEveryMessageGenerated: the apps' messages all take the generated
// path, so none is left to protojson by accident.
func TestEveryMessageGenerated(t *testing.T) {
	for _, mt := range messageTypes(t) {
		if !pbjson.Generated(mt.New().Interface()) {
			t.Errorf("%s has no generated JSON code (run make proto)", mt.Descriptor().FullName())
		}
	}
}

// TestRandomMessages checks generated code against protojson on random
// messages of every type: the same bytes out (less protojson's random
// spaces), and each reads the other's output back into an equal message,
// the generated decoder without help from protojson.
func TestRandomMessages(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f := filler{r}
	indent := protojson.MarshalOptions{Multiline: true, Indent: "\t"}
	protoNames := protojson.MarshalOptions{UseProtoNames: true}
	for _, mt := range messageTypes(t) {
		name := mt.Descriptor().FullName()
		for i := range 300 {
			m := mt.New()
			f.message(m, 3)
			orig := m.Interface()
			desc := fmt.Sprintf("%s #%d: %v", name, i, orig)

			fast, errFast := pbjson.Marshal(orig)
			want, errPJ := protojson.Marshal(orig)
			if (errFast != nil) != (errPJ != nil) {
				t.Fatalf("%s: marshal errors differ: %v, protojson %v", desc, errFast, errPJ)
			}
			if errPJ != nil {
				continue // invalid UTF-8, which protojson refuses too
			}
			if got, want := compact(t, fast), compact(t, want); !bytes.Equal(got, want) {
				t.Fatalf("%s:\ngot  %s\nwant %s", desc, got, want)
			}
			back := mt.New().Interface()
			if err := protojson.Unmarshal(fast, back); err != nil || !proto.Equal(back, orig) {
				t.Fatalf("%s: protojson reads our %s as %v, %v", desc, fast, back, err)
			}
			for _, opts := range []protojson.MarshalOptions{{}, indent, protoNames} {
				in, err := opts.Marshal(orig)
				if err != nil {
					t.Fatal(err)
				}
				for _, discard := range []bool{false, true} {
					got := mt.New().Interface().(pbjson.Message)
					err := pbjson.DecodeFast(in, got, pbjson.UnmarshalOptions{DiscardUnknown: discard})
					if err != nil || !proto.Equal(got, orig) {
						t.Fatalf("%s: generated code reads protojson's %s as %v, %v", desc, in, got, err)
					}
				}
			}
		}
	}
}

// TestShapes writes and reads, beside protojson, each shape a field of
// echo.Shape (the Mirror method's message) can take, with values chosen
// at the edges.
func TestShapes(t *testing.T) {
	zero := int64(0)
	for _, m := range []*echo.Shape{
		{},
		{Name: "x", Kind: echo.Shape_KIND_POLYGON, Blob: []byte{0xfb, 0xff}},
		{Count: &zero}, // set to zero: written
		{Size: &echo.Shape_Radius{Radius: 0}},
		{Size: &echo.Shape_Radius{Radius: math.Inf(-1)}},
		{Size: &echo.Shape_Corner{Corner: &echo.Point{}}},
		{Size: &echo.Shape_Corner{}}, // a oneof member holding nil
		{Kind: 42},                   // a number the enum does not name
		{Points: []*echo.Point{{X: -1}, nil, {Y: math.MaxInt32}}},
		{Labels: map[string]*echo.Point{"b": {X: 1}, "a": nil, "": {}, "é": {Y: -2}}},
	} {
		fast, err := pbjson.Marshal(m)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		want, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fast, compact(t, want)) {
			t.Errorf("%v:\ngot  %s\nwant %s", m, fast, compact(t, want))
		}
		var back, wantBack echo.Shape
		if err := pbjson.DecodeFast(want, &back, pbjson.UnmarshalOptions{}); err != nil {
			t.Errorf("%s: %v", want, err)
		}
		protojson.Unmarshal(want, &wantBack)
		if !proto.Equal(&back, &wantBack) {
			t.Errorf("%s: read as %v, protojson %v", want, &back, &wantBack)
		}
	}
}

// TestMarshalFallsBack: a string that is not UTF-8 fails as protojson
// fails, with its error.
func TestMarshalFallsBack(t *testing.T) {
	m := &kinds.Kinds{FLeaf: &kinds.Leaf{Label: "bad \xff"}}
	_, err := pbjson.Marshal(m)
	_, want := protojson.Marshal(m)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("got %v, want protojson's %v", err, want)
	}
	// A message with no generated code is protojson's.
	v := structpb.NewStringValue("x")
	got, err := pbjson.Marshal(v)
	if err != nil || string(compact(t, got)) != `"x"` {
		t.Errorf("Value: %s, %v", got, err)
	}
}

// inputs are JSON texts for Kinds, valid and not. fast says the generated
// decoder reads it by itself; the others it must leave to protojson.
var inputs = []struct {
	in   string
	fast bool
}{
	{`{}`, true},
	{" \t\r\n{ } \n", true},
	{`{"fInt32":1,"f_int64":"-2","fUint32":"3","fUint64":4}`, true},
	{`{"fInt32":-2147483648,"fInt64":"-9223372036854775808","fUint64":"9223372036854775807"}`, true},
	{`{"fUint64":"18446744073709551615","rUint64":[18446744073709551615]}`, true},
	{`{"fUint64":"18446744073709551616"}`, false},
	{`{"fUint64":"99999999999999999999"}`, false},
	{`{"fInt64":"-9223372036854775809"}`, false},
	{`{"fInt64":"-18446744073709551615"}`, false},
	{`{"fInt32":2147483648}`, false},
	{`{"fUint32":-1}`, false},
	{`{"fInt32":1.0}`, false},
	{`{"fInt32":1e2}`, false},
	{`{"fInt32":"1e2"}`, false},
	{`{"fInt32":" 1"}`, false},
	{`{"fInt32":01}`, false},
	{`{"fInt32":-}`, false},
	{`{"fInt32":1x}`, false},
	{`{"fInt32":true}`, false},
	{`{"fInt32":"-0"}`, true},
	{`{"fFloat":1.5,"fDouble":-2e-3}`, true},
	{`{"fFloat":"NaN","fDouble":"-Infinity","oFloat":"Infinity"}`, true},
	{`{"fDouble":"1.25"}`, true},
	{`{"fDouble":"nan"}`, false},
	{`{"fFloat":3.5e38}`, false},
	{`{"fDouble":1e400}`, false},
	{`{"fDouble":1.}`, false},
	{`{"fDouble":.5}`, false},
	{`{"fBool":true,"oBool":false}`, true},
	{`{"fBool":"true"}`, false},
	{`{"fBool":truex}`, false},
	{`{"fString":"a\"\\\/\b\f\n\r\tz\u00e9\ud83d\ude00"}`, true},
	{`{"fString":"\ud83d"}`, false},
	{`{"fString":"\ude00\ud83d"}`, false},
	{`{"fString":"\x"}`, false},
	{"{\"fString\":\"tab\there\"}", false},
	{"{\"fString\":\"bad \xff\"}", false},
	{`{"fString":1}`, false},
	{`{"fBytes":"+/8="}`, true},
	{`{"fBytes":"-_8"}`, true},
	{`{"fBytes":"+/8"}`, true},
	{`{"fBytes":"-_8="}`, true},
	{`{"fBytes":"YQ\u003d\u003d"}`, true},
	{`{"fBytes":"!!"}`, false},
	{`{"fBytes":"YWJj\n\n\n\nZGVm"}`, true},
	{`{"fBytes":"YQ=\n="}`, false},
	{`{"fColor":"COLOR_RED","fSize":"SIZE_LARGE","rColor":["COLOR_CRIMSON",2,-7]}`, true},
	{`{"fColor":null,"fLeaf":null,"rInt32":null,"mInt32":null,"oInt32":null,"fString":null}`, true},
	{`{"rInt32":[null]}`, false},
	{`{"rLeaf":[null]}`, false},
	{`{"mString":{"a":null}}`, false},
	{`{"fInt32":1,"f_int32":2}`, false},
	{`{"fInt32":null,"fInt32":2}`, false},
	{`{"cInt32":1,"cString":"x"}`, false},
	{`{"cInt32":null,"cString":"x","cBool":true}`, true},
	{`{"cLeaf":{"x":1,"children":[{},{"label":"y"}]}}`, true},
	{`{"customName":"a"}`, true},
	{`{"named":"a"}`, true},
	{`{"fInt32":1,}`, false},
	{`{,"fInt32":1}`, false},
	{`{"fInt32":1 "fBool":true}`, false},
	{`{"fInt32" 1}`, false},
	{`{"rInt32":[1,]}`, false},
	{`{"rInt32":[,1]}`, false},
	{`{"rInt32":[1 2]}`, false},
	{`{"rInt32":[1,2],"rString":["a"],"rBytes":["AA=="],"rBool":[true],"rFloat":[1,"NaN"],"rUint64":["1",2]}`, true},
	{`{"mInt32":{"-1":"a","+2":"b","007":"c"},"mBool":{"false":"COLOR_RED"},"mUint64":{"18446744073709551615":1.5}}`, true},
	{`{"mInt32":{"1":"a","01":"b"}}`, false},
	{`{"mInt32":{"x":"a"}}`, false},
	{`{"mBool":{"True":"COLOR_RED"}}`, false},
	{`{"mString":{"k":{"x":1}},"mStringUint32":{"a":1,"b":"2"}}`, true},
	{`{"mString":{"k":{},"k":{}}}`, false},
	{`{"wDuration":"1.5s","wTimestamp":"2024-01-02T03:04:05Z","wValue":{"a":[1,null]},"wInt64":"5","wEmpty":{}}`, true},
	{`{"wValue":null,"cValue":null,"wValues":[null,1],"wMap":{"a":null}}`, true},
	{`{"wDuration":"1x"}`, false},
	{`{"wDuration":null,"wStruct":null}`, true},
	{`{"wValues":[{}],"wList":[1,"a"]}`, true},
	{`{}x`, false},
	{`{}{}`, false},
	{`{"fInt32":1}}`, false},
	{`[]`, false},
	{`null`, false},
	{``, false},
	{`{`, false},
	{`{"fInt32`, false},
	{`{"fKinds":{"fKinds":{"fKinds":{"fInt32":3}}}}`, true},
}

// unknownInputs have unknown members, which protojson refuses by default
// and skips with DiscardUnknown, checking that they are JSON.
var unknownInputs = []string{
	`{"nope":1}`,
	`{"nope":{"a":[1,{"b":null}],"c":"\u00e9"},"fInt32":2}`,
	`{"nope":1e}`,
	`{"nope":-}`,
	`{"nope":[1,]}`,
	`{"nope":"bad \ud800"}`,
	`{"nope":tru}`,
	`{"fColor":"COLOR_BLUE","rColor":["COLOR_BLUE",1],"mBool":{"true":"COLOR_BLUE"},"cColor":"COLOR_BLUE","oColor":"COLOR_BLUE"}`,
	`{"[svclab.nope]":1}`,
	`{"[]":1}`,
	`{"Named":"a"}`,
	`{"fColor":"RED"}`,
	`{"rColor":["RED"]}`,
	`{"mBool":{"true":"NOPE"}}`,
	`{"fColor":"1"}`,
}

// TestUnmarshalMatchesProtojson reads every input both ways: the same
// message or the same error, and the generated decoder alone takes
// exactly the inputs it is expected to.
func TestUnmarshalMatchesProtojson(t *testing.T) {
	check := func(t *testing.T, in string, discard bool) (fast bool) {
		t.Helper()
		opts := pbjson.UnmarshalOptions{DiscardUnknown: discard}
		var got, want kinds.Kinds
		err := opts.Unmarshal([]byte(in), &got)
		wantErr := protojson.UnmarshalOptions{DiscardUnknown: discard}.Unmarshal([]byte(in), &want)
		switch {
		case (err == nil) != (wantErr == nil):
			t.Errorf("%s (discard %v): error %v, protojson %v", in, discard, err, wantErr)
		case err != nil && err.Error() != wantErr.Error():
			t.Errorf("%s: error %q, protojson %q", in, err, wantErr)
		case err == nil && !proto.Equal(&got, &want):
			t.Errorf("%s: got %v, protojson %v", in, &got, &want)
		}
		var alone kinds.Kinds
		fastErr := pbjson.DecodeFast([]byte(in), &alone, opts)
		if fastErr != nil && !errors.Is(fastErr, pbjson.ErrFallback) {
			t.Errorf("%s: generated decoder failed with %v, not ErrFallback", in, fastErr)
		}
		if fastErr == nil && (wantErr != nil || !proto.Equal(&alone, &want)) {
			t.Errorf("%s: generated decoder alone took it as %v; protojson %v, %v", in, &alone, &want, wantErr)
		}
		return fastErr == nil
	}
	for _, tc := range inputs {
		for _, discard := range []bool{false, true} {
			if fast := check(t, tc.in, discard); fast != tc.fast {
				t.Errorf("%s (discard %v): generated decoder took it alone: %v, want %v", tc.in, discard, fast, tc.fast)
			}
		}
	}
	for _, in := range unknownInputs {
		if check(t, in, false) {
			t.Errorf("%s: generated decoder took an unknown member", in)
		}
		check(t, in, true)
	}
}

// TestUnmarshalSelect reads S3's request in both sizes and checks the
// generated decoder reads it alone.
func TestUnmarshalSelect(t *testing.T) {
	for _, n := range []int{200, 204_800} {
		want := &selector.SelectRequest{Values: make([]int32, n), SleepMicros: 3}
		for i := range want.Values {
			want.Values[i] = int32(i*7919) % 1001
		}
		b, err := pbjson.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got selector.SelectRequest
		if err := pbjson.DecodeFast(b, &got, pbjson.UnmarshalOptions{}); err != nil || !proto.Equal(&got, want) {
			t.Errorf("%d values: %v, equal %v", n, err, proto.Equal(&got, want))
		}
	}
}

// FuzzUnmarshal: whatever the input, pbjson.Unmarshal answers as
// protojson does, and the generated decoder alone never accepts what
// protojson refuses.
func FuzzUnmarshal(f *testing.F) {
	for _, tc := range inputs {
		f.Add([]byte(tc.in), false)
	}
	for _, in := range unknownInputs {
		f.Add([]byte(in), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, discard bool) {
		opts := pbjson.UnmarshalOptions{DiscardUnknown: discard}
		var got, want, alone kinds.Kinds
		err := opts.Unmarshal(in, &got)
		wantErr := protojson.UnmarshalOptions{DiscardUnknown: discard}.Unmarshal(in, &want)
		if (err == nil) != (wantErr == nil) || err == nil && !proto.Equal(&got, &want) {
			t.Fatalf("%q: %v, %v; protojson %v, %v", in, &got, err, &want, wantErr)
		}
		if pbjson.DecodeFast(in, &alone, opts) == nil && (wantErr != nil || !proto.Equal(&alone, &want)) {
			t.Fatalf("%q: generated decoder took it as %v; protojson %v, %v", in, &alone, &want, wantErr)
		}
	})
}

func TestDeepNesting(t *testing.T) {
	// Past pbjson's depth bound protojson decides, and past its own
	// recursion limit it refuses.
	for _, depth := range []int{100, 9500, 10001} {
		in := strings.Repeat(`{"fKinds":`, depth) + "{}" + strings.Repeat("}", depth)
		var got, want kinds.Kinds
		err := pbjson.Unmarshal([]byte(in), &got)
		wantErr := protojson.Unmarshal([]byte(in), &want)
		if (err == nil) != (wantErr == nil) || err == nil && !proto.Equal(&got, &want) {
			t.Errorf("depth %d: %v, protojson %v", depth, err, wantErr)
		}
	}
}
