package pbjson

import (
	"cmp"
	"encoding/base64"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// AppendString appends s as a JSON string escaped as protojson escapes
// it: quote, backslash and control characters only, the latter as \b,
// \f, \n, \r, \t or \u00xx. Invalid UTF-8 is ErrFallback, for protojson to
// report.
func AppendString(b []byte, s string) ([]byte, error) {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return b, ErrFallback
			}
			i += n
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}

// AppendBytes appends v in standard base64, quoted.
func AppendBytes(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// AppendQuotedInt appends v as a quoted decimal, the JSON form of the
// 64-bit integer types, which JavaScript's numbers cannot hold.
func AppendQuotedInt(b []byte, v int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, v, 10)
	return append(b, '"')
}

// AppendQuotedUint is AppendQuotedInt for unsigned values.
func AppendQuotedUint(b []byte, v uint64) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, v, 10)
	return append(b, '"')
}

// AppendFloat appends v as protojson does: NaN and the infinities as
// strings, the shortest decimal that reads back as v, in exponent form
// below 1e-6 and from 1e21 on, as encoding/json does.
func AppendFloat(b []byte, v float64, bits int) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(v); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, v, format, -1, bits)
	if format == 'e' {
		// 1e-07 becomes 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendBool appends true or false.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// AppendEnum appends an enum value by its name in names, or as a number
// when it has none, as protojson writes values newer than the code.
func AppendEnum(b []byte, v int32, names map[int32]string) []byte {
	if name, ok := names[v]; ok {
		b = append(b, '"')
		b = append(b, name...)
		return append(b, '"')
	}
	return strconv.AppendInt(b, int64(v), 10)
}

// AppendMessage appends m, a message of another Go package: through its
// generated code if it has some, else through protojson.
func AppendMessage(b []byte, m proto.Message) ([]byte, error) {
	if g, ok := m.(Message); ok {
		return g.AppendProtoJSON(b)
	}
	b, err := protojson.MarshalOptions{}.MarshalAppend(b, m)
	if err != nil {
		return b, ErrFallback
	}
	return b, nil
}

// AppendInt32s appends a list of int32, sint32 or sfixed32 values, having
// made room for the longest, so that the loop never grows b.
func AppendInt32s(b []byte, v []int32) []byte {
	b = slices.Grow(b, 2+len(v)*len(",-2147483648"))
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		u := uint32(x)
		if x < 0 {
			b = append(b, '-')
			u = -u
		}
		b = appendUint32(b, u)
	}
	return append(b, ']')
}

// pairs holds "00" to "99", for writing two digits at a time.
const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendUint32 appends u in decimal, as strconv.AppendUint does, without
// the detour through a buffer for the short numbers lists hold.
func appendUint32(b []byte, u uint32) []byte {
	switch {
	case u < 10:
		return append(b, byte('0'+u))
	case u < 100:
		return append(b, pairs[2*u], pairs[2*u+1])
	case u < 1000:
		r := u % 100
		return append(b, byte('0'+u/100), pairs[2*r], pairs[2*r+1])
	}
	return strconv.AppendUint(b, uint64(u), 10)
}

// AppendUint32s appends a list of uint32 or fixed32 values.
func AppendUint32s(b []byte, v []uint32) []byte {
	b = slices.Grow(b, 2+len(v)*len(",4294967295"))
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendUint32(b, x)
	}
	return append(b, ']')
}

// appendList appends v as an array, each element written by one.
func appendList[T any](b []byte, v []T, one func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = one(b, x)
	}
	return append(b, ']')
}

// AppendInt64s appends a list of int64, sint64 or sfixed64 values.
func AppendInt64s(b []byte, v []int64) []byte { return appendList(b, v, AppendQuotedInt) }

// AppendUint64s appends a list of uint64 or fixed64 values.
func AppendUint64s(b []byte, v []uint64) []byte { return appendList(b, v, AppendQuotedUint) }

// AppendFloat32s appends a list of float values.
func AppendFloat32s(b []byte, v []float32) []byte {
	return appendList(b, v, func(b []byte, x float32) []byte { return AppendFloat(b, float64(x), 32) })
}

// AppendFloat64s appends a list of double values.
func AppendFloat64s(b []byte, v []float64) []byte {
	return appendList(b, v, func(b []byte, x float64) []byte { return AppendFloat(b, x, 64) })
}

// AppendBools appends a list of bool values.
func AppendBools(b []byte, v []bool) []byte { return appendList(b, v, AppendBool) }

// AppendBytesList appends a list of bytes values.
func AppendBytesList(b []byte, v [][]byte) []byte { return appendList(b, v, AppendBytes) }

// AppendStrings appends a list of strings.
func AppendStrings(b []byte, v []string) ([]byte, error) {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = AppendString(b, x); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// SortedKeys returns m's keys in the order protojson writes map entries:
// numbers by value, strings by their bytes.
func SortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// SortedBoolKeys is SortedKeys for bool keys: false first.
func SortedBoolKeys[V any](m map[bool]V) []bool {
	keys := make([]bool, 0, 2)
	for _, k := range []bool{false, true} {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// AppendQuotedBool appends a bool map key: "true" or "false", quoted.
func AppendQuotedBool(b []byte, v bool) []byte {
	if v {
		return append(b, `"true"`...)
	}
	return append(b, `"false"`...)
}
