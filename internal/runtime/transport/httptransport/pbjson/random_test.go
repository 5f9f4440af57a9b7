package pbjson_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// filler sets random values in messages, favouring the values where
// encoders go wrong: limits, zeros, special floats, escapes.
type filler struct{ r *rand.Rand }

func (f filler) pick(n int) int { return f.r.IntN(n) }

// message fills m, leaving each field unset half the time, down to depth
// levels of nesting.
func (f filler) message(m protoreflect.Message, depth int) {
	if f.wellKnown(m) {
		return
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if f.pick(2) == 0 || fd.Message() != nil && depth == 0 {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range f.pick(5) {
				if fd.Message() != nil {
					v := l.NewElement()
					f.message(v.Message(), depth-1)
					l.Append(v)
				} else {
					l.Append(f.scalar(fd))
				}
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range f.pick(4) {
				k := f.scalar(fd.MapKey()).MapKey()
				if fd.MapValue().Message() != nil {
					v := mp.NewValue()
					f.message(v.Message(), depth-1)
					mp.Set(k, v)
				} else {
					mp.Set(k, f.scalar(fd.MapValue()))
				}
			}
		case fd.Message() != nil:
			v := m.NewField(fd)
			f.message(v.Message(), depth-1)
			m.Set(fd, v)
		default:
			m.Set(fd, f.scalar(fd))
		}
	}
}

// wellKnown fills the well-known types with values protojson can write
// (a Duration in range, a Value with its kind set), reporting whether m
// was one.
func (f filler) wellKnown(m protoreflect.Message) bool {
	var v proto.Message
	switch m.Descriptor().FullName() {
	case "google.protobuf.Duration":
		v = durationpb.New(time.Duration(f.r.Int64N(1e12) - 5e11))
	case "google.protobuf.Timestamp":
		v = timestamppb.New(time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)))
	case "google.protobuf.Value":
		v = f.value(2)
	case "google.protobuf.Struct":
		v = f.value(2).GetStructValue()
		if v == nil {
			v = &structpb.Struct{}
		}
	case "google.protobuf.ListValue":
		v = &structpb.ListValue{Values: []*structpb.Value{f.value(1), f.value(0)}}
	case "google.protobuf.Int64Value":
		v = wrapperspb.Int64(f.r.Int64())
	case "google.protobuf.StringValue":
		v = wrapperspb.String(f.str())
	case "google.protobuf.Empty":
		return true
	default:
		return false
	}
	proto.Merge(m.Interface(), v)
	return true
}

func (f filler) value(depth int) *structpb.Value {
	switch n := f.pick(6); {
	case n == 0:
		return structpb.NewNullValue()
	case n == 1:
		return structpb.NewBoolValue(f.pick(2) == 0)
	case n == 2:
		return structpb.NewNumberValue(f.float64())
	case n == 3 || depth == 0:
		return structpb.NewStringValue(f.str())
	case n == 4:
		return structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{f.value(depth - 1)}})
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{f.str(): f.value(depth - 1)}})
}

func (f filler) float64() float64 {
	for {
		if v := f.anyFloat64(); !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v // what a Value's number may hold
		}
	}
}

func (f filler) anyFloat64() float64 {
	special := []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-7, 1e-6, 1e20, 1e21, 123456789.125,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}
	if f.pick(2) == 0 {
		return special[f.pick(len(special))]
	}
	return math.Float64frombits(f.r.Uint64())
}

func (f filler) anyFloat32() float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1.5, 0.1, 1e-7, 1e-6, 1e20, 1e21,
		math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	if f.pick(2) == 0 {
		return special[f.pick(len(special))]
	}
	return math.Float32frombits(f.r.Uint32())
}

// str joins pieces that need escaping, or care, in JSON.
func (f filler) str() string {
	pieces := []string{"", "a", "Hello", "é", "😀", `"`, `\`, "/", "\n", "\t", "\b", "\f", "\r", "\x00", "\x1f",
		"\x7f", "\u2028", "<>&", "\ufffd", "\u00a0", "1", " "}
	var b strings.Builder
	for range f.pick(5) {
		b.WriteString(pieces[f.pick(len(pieces))])
	}
	return b.String()
}

func (f filler) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	ints := []int64{0, 1, -1, 7, 1000, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1<<53 + 1}
	anyInt := func() int64 {
		if f.pick(2) == 0 {
			return ints[f.pick(len(ints))]
		}
		return int64(f.r.Uint64()) >> f.pick(64)
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(f.pick(2) == 0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(anyInt()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(anyInt())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(anyInt()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(anyInt()))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(f.anyFloat32())
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(f.anyFloat64())
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(f.str())
	case protoreflect.BytesKind:
		b := make([]byte, f.pick(12))
		for i := range b {
			b[i] = byte(f.r.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		if f.pick(4) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(f.pick(20) - 10)) // maybe unknown
		}
		return protoreflect.ValueOfEnum(values.Get(f.pick(values.Len())).Number())
	}
	panic("filler: kind " + fd.Kind().String())
}
