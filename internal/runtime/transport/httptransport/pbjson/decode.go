package pbjson

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// maxDepth bounds the nesting of objects generated code decodes, below
// protojson's recursion limit of 10,000 messages, so that protojson
// reports deeper input.
const maxDepth = 9000

// Decoder reads JSON for generated code. Each method skips the whitespace
// before its token and returns ErrFallback for input it does not take,
// having consumed an unspecified part of it: the caller gives up.
type Decoder struct {
	buf            []byte
	pos            int
	depth          int
	discardUnknown bool
	scratch        []byte // names and strings with escapes, decoded
}

// isSpace is JSON's whitespace, which is all protojson skips.
func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// isNotDelim reports whether c may not follow a literal or number, as
// protojson decides: "truex" and "1a" are not tokens.
func isNotDelim(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c == '_' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (d *Decoder) peek() byte {
	for d.pos < len(d.buf) {
		c := d.buf[d.pos]
		if !isSpace(c) {
			return c
		}
		d.pos++
	}
	return 0
}

// end checks that only whitespace follows the top-level value.
func (d *Decoder) end() error {
	if d.peek() != 0 || d.pos != len(d.buf) {
		return ErrFallback
	}
	return nil
}

// ObjectStart reads '{'.
func (d *Decoder) ObjectStart() error {
	if d.peek() != '{' {
		return ErrFallback
	}
	d.pos++
	d.depth++
	if d.depth > maxDepth {
		return ErrFallback
	}
	return nil
}

// NextField reads what follows an object's '{' (first) or member: '}',
// which ends the object and returns false, or (after a member) ',' and
// returns true; the name comes next.
func (d *Decoder) NextField(first bool) (bool, error) {
	c := d.peek()
	if c == '}' {
		d.pos++
		d.depth--
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, ErrFallback
		}
		d.pos++
	}
	return true, nil
}

// Name reads a member's name and the ':' after it. The name is valid until
// the next call.
func (d *Decoder) Name() ([]byte, error) {
	name, err := d.quoted()
	if err != nil {
		return nil, err
	}
	if d.peek() != ':' {
		return nil, ErrFallback
	}
	d.pos++
	return name, nil
}

// ArrayStart reads '['.
func (d *Decoder) ArrayStart() error {
	if d.peek() != '[' {
		return ErrFallback
	}
	d.pos++
	return nil
}

// NextElem reads what follows an array's '[' (first) or element: ']',
// which ends the array and returns false, or (after an element) ',' and
// returns true.
func (d *Decoder) NextElem(first bool) (bool, error) {
	c := d.peek()
	if c == ']' {
		d.pos++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, ErrFallback
		}
		d.pos++
	}
	return true, nil
}

// Null reads null if it comes next.
func (d *Decoder) Null() bool {
	if d.peek() != 'n' || !d.literal("null") {
		return false
	}
	return true
}

// literal consumes word if the input continues with it as a whole token.
func (d *Decoder) literal(word string) bool {
	end := d.pos + len(word)
	if end > len(d.buf) || string(d.buf[d.pos:end]) != word || end < len(d.buf) && isNotDelim(d.buf[end]) {
		return false
	}
	d.pos = end
	return true
}

// Bool reads true or false.
func (d *Decoder) Bool() (bool, error) {
	switch d.peek() {
	case 't':
		if d.literal("true") {
			return true, nil
		}
	case 'f':
		if d.literal("false") {
			return false, nil
		}
	}
	return false, ErrFallback
}

// digits reads an integer of JSON's grammar (an optional minus, no
// leading zeros) whose magnitude fits in a uint64 and is neither followed by a
// fraction or exponent nor by anything protojson would take as part of
// the token. Other numbers are left to protojson.
func (d *Decoder) digits() (neg bool, n uint64, err error) {
	b, i := d.buf, d.pos
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		n = n*10 + uint64(c)
	}
	nd := i - start
	switch {
	case nd == 0, nd > 1 && b[start] == '0', nd > 20, i < len(b) && isNotDelim(b[i]):
		return false, 0, ErrFallback
	case nd == 20:
		// Twenty digits may overflow, which the sum above does not see.
		if n, err = strconv.ParseUint(string(b[start:i]), 10, 64); err != nil {
			return false, 0, ErrFallback
		}
	}
	d.pos = i
	return neg, n, nil
}

// integer reads a number or, as protojson accepts for every integer
// field, a string holding one.
func (d *Decoder) integer() (neg bool, n uint64, err error) {
	if d.peek() != '"' {
		return d.digits()
	}
	d.pos++
	neg, n, err = d.digits()
	if err != nil || d.pos >= len(d.buf) || d.buf[d.pos] != '"' {
		return false, 0, ErrFallback
	}
	d.pos++
	return neg, n, nil
}

func (d *Decoder) Int32() (int32, error) {
	neg, n, err := d.integer()
	switch {
	case err != nil:
		return 0, err
	case neg && n <= 1<<31:
		return int32(-int64(n)), nil
	case !neg && n < 1<<31:
		return int32(n), nil
	}
	return 0, ErrFallback
}

func (d *Decoder) Int64() (int64, error) {
	neg, n, err := d.integer()
	switch {
	case err != nil:
		return 0, err
	case neg && n <= 1<<63:
		return int64(-n), nil
	case !neg && n < 1<<63:
		return int64(n), nil
	}
	return 0, ErrFallback
}

func (d *Decoder) Uint32() (uint32, error) {
	neg, n, err := d.integer()
	if err != nil || neg || n > math.MaxUint32 {
		return 0, ErrFallback
	}
	return uint32(n), nil
}

// Uint64 reads a uint64.
func (d *Decoder) Uint64() (uint64, error) {
	neg, n, err := d.integer()
	if err != nil || neg {
		return 0, ErrFallback
	}
	return n, nil
}

func (d *Decoder) Float32() (float32, error) {
	f, err := d.float(32)
	return float32(f), err
}

func (d *Decoder) Float64() (float64, error) { return d.float(64) }

// float reads a number, or a string holding one or NaN, Infinity or
// -Infinity, and parses it as protojson does, with strconv.ParseFloat.
func (d *Decoder) float(bits int) (float64, error) {
	var tok []byte
	if d.peek() == '"' {
		s, err := d.stringBytes()
		if err != nil {
			return 0, err
		}
		switch string(s) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		if n := numberLen(s); n == 0 || n != len(s) {
			return 0, ErrFallback
		}
		tok = s
	} else {
		n := numberLen(d.buf[d.pos:])
		if n == 0 {
			return 0, ErrFallback
		}
		tok = d.buf[d.pos : d.pos+n]
		d.pos += n
	}
	f, err := strconv.ParseFloat(string(tok), bits)
	if err != nil {
		return 0, ErrFallback
	}
	return f, nil
}

// numberLen returns the length of the JSON number at the start of b, as
// protojson's tokenizer delimits it, or 0 if there is none.
func numberLen(b []byte) int {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	default:
		return 0
	}
	if i+1 < len(b) && b[i] == '.' && '0' <= b[i+1] && b[i+1] <= '9' {
		for i += 2; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	if i+1 < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if b[i] == '+' || b[i] == '-' {
			i++
			if i == len(b) {
				return 0
			}
		}
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && isNotDelim(b[i]) {
		return 0
	}
	return i
}

// String reads a string.
func (d *Decoder) String() (string, error) {
	s, err := d.quoted()
	return string(s), err
}

// stringBytes reads the string at d.pos, which is '"', and returns its
// contents: a slice of the input when it has no escapes, else of
// d.scratch. It checks what protojson checks: UTF-8, no control
// characters, valid escapes.
func (d *Decoder) stringBytes() ([]byte, error) {
	b := d.buf
	start := d.pos + 1
	i := start
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return b[start:i], nil
		case c == '\\':
			return d.escaped(start, i)
		case c < 0x20:
			return nil, ErrFallback
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, ErrFallback
			}
			i += n
		}
	}
	return nil, ErrFallback
}

// escaped decodes the rest of a string whose first escape is at i into
// d.scratch.
func (d *Decoder) escaped(start, i int) ([]byte, error) {
	b := d.buf
	out := append(d.scratch[:0], b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.scratch = out
			return out, nil
		case c == '\\':
			if i+1 >= len(b) {
				return nil, ErrFallback
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(b, i+2)
				if !ok {
					return nil, ErrFallback
				}
				if utf16.IsSurrogate(r) {
					lo, ok := hex4(b, i+8)
					if !ok || b[i+6] != '\\' || b[i+7] != 'u' {
						return nil, ErrFallback
					}
					if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
						return nil, ErrFallback
					}
					i += 6
				}
				out = utf8.AppendRune(out, r)
				i += 4
			default:
				return nil, ErrFallback
			}
			i += 2
		case c < 0x20:
			return nil, ErrFallback
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, ErrFallback
			}
			out = append(out, b[i:i+n]...)
			i += n
		}
	}
	return nil, ErrFallback
}

// hex4 parses the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Bytes reads base64 as protojson does: standard or URL-safe alphabet
// (the latter when the text has '-' or '_'), padded or not.
func (d *Decoder) Bytes() ([]byte, error) {
	s, err := d.quoted()
	if err != nil {
		return nil, err
	}
	enc := base64.StdEncoding
	for _, c := range s {
		if c == '-' || c == '_' {
			enc = base64.URLEncoding
			break
		}
	}
	if len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	out := make([]byte, enc.DecodedLen(len(s)))
	n, err := enc.Decode(out, s)
	if err != nil {
		return nil, ErrFallback
	}
	return out[:n], nil
}

// Enum reads an enum value by name, looked up in values, or by number.
// ok is false for a name values does not have when unknown names are
// discarded: the caller leaves the field unset.
func (d *Decoder) Enum(values map[string]int32) (v int32, ok bool, err error) {
	if d.peek() != '"' {
		v, err = d.Int32()
		return v, err == nil, err
	}
	s, err := d.stringBytes()
	if err != nil {
		return 0, false, err
	}
	if v, ok := values[string(s)]; ok {
		return v, true, nil
	}
	if d.discardUnknown {
		return 0, false, nil
	}
	return 0, false, ErrFallback
}

// Message reads m, a message of another Go package: through its generated
// code if it has some, else through protojson.
func (d *Decoder) Message(m proto.Message) error {
	if g, ok := m.(Message); ok {
		return g.DecodeProtoJSON(d)
	}
	d.peek()
	from := d.pos
	if err := d.Skip(); err != nil {
		return err
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: d.discardUnknown}).Unmarshal(d.buf[from:d.pos], m); err != nil {
		return ErrFallback
	}
	return nil
}

// Unknown handles the value of a member whose name the message does not
// have: skipped when unknown fields are discarded, else left to protojson
// to report. Names in brackets are extensions, which protojson resolves
// even then.
func (d *Decoder) Unknown(name []byte) error {
	if !d.discardUnknown || len(name) > 0 && name[0] == '[' && name[len(name)-1] == ']' {
		return ErrFallback
	}
	return d.Skip()
}

// Skip reads any JSON value, checking it as protojson does.
func (d *Decoder) Skip() error {
	switch c := d.peek(); c {
	case '{':
		if err := d.ObjectStart(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := d.NextField(first)
			if err != nil || !more {
				return err
			}
			if _, err := d.Name(); err != nil {
				return err
			}
			if err := d.Skip(); err != nil {
				return err
			}
		}
	case '[':
		d.pos++
		d.depth++
		if d.depth > maxDepth {
			return ErrFallback
		}
		for first := true; ; first = false {
			more, err := d.NextElem(first)
			if err != nil {
				return err
			}
			if !more {
				d.depth--
				return nil
			}
			if err := d.Skip(); err != nil {
				return err
			}
		}
	case '"':
		_, err := d.stringBytes()
		return err
	case 't', 'f':
		_, err := d.Bool()
		return err
	case 'n':
		if d.Null() {
			return nil
		}
	default:
		if n := numberLen(d.buf[d.pos:]); n > 0 {
			d.pos += n
			return nil
		}
	}
	return ErrFallback
}

// MapKeyInt32 and the functions below parse a map key, which JSON writes
// as a string, as protojson does (strconv in base 10).
func MapKeyInt32(name []byte) (int32, error) {
	n, err := strconv.ParseInt(string(name), 10, 32)
	return int32(n), keyErr(err)
}

func MapKeyInt64(name []byte) (int64, error) {
	n, err := strconv.ParseInt(string(name), 10, 64)
	return n, keyErr(err)
}

func MapKeyUint32(name []byte) (uint32, error) {
	n, err := strconv.ParseUint(string(name), 10, 32)
	return uint32(n), keyErr(err)
}

func MapKeyUint64(name []byte) (uint64, error) {
	n, err := strconv.ParseUint(string(name), 10, 64)
	return n, keyErr(err)
}

func keyErr(err error) error {
	if err != nil {
		return ErrFallback
	}
	return nil
}

func MapKeyBool(name []byte) (bool, error) {
	switch string(name) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, ErrFallback
}

// readList reads an array of values that read reads.
func readList[T any](d *Decoder, dst []T, read func(*Decoder) (T, error)) ([]T, error) {
	if err := d.ArrayStart(); err != nil {
		return dst, err
	}
	for first := true; ; first = false {
		more, err := d.NextElem(first)
		if err != nil || !more {
			return dst, err
		}
		v, err := read(d)
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
}

// Int32s appends an array of int32 values to dst. Arrays of numbers are
// what large messages are made of (S3's request is 204,800 of them), so
// plain numbers are parsed here in one loop over the input, and dst is
// sized once from the count of commas; anything else takes Int32.
func (d *Decoder) Int32s(dst []int32) ([]int32, error) {
	if err := d.ArrayStart(); err != nil {
		return dst, err
	}
	b, i := d.buf, d.pos
	if dst == nil {
		dst = make([]int32, 0, countElems(b[i:]))
	}
	for first := true; ; first = false {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i < len(b) && b[i] == ']' {
			d.pos = i + 1
			return dst, nil
		}
		if !first {
			if i >= len(b) || b[i] != ',' {
				return dst, ErrFallback
			}
			for i++; i < len(b) && isSpace(b[i]); i++ {
			}
		}
		j, neg := i, false
		if j < len(b) && b[j] == '-' {
			neg = true
			j++
		}
		start := j
		var n uint64
		for ; j < len(b); j++ {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			n = n*10 + uint64(c)
		}
		nd := j - start
		if nd == 0 || nd > 10 || nd > 1 && b[start] == '0' || j < len(b) && isNotDelim(b[j]) ||
			neg && n > 1<<31 || !neg && n >= 1<<31 {
			// Quoted, out of range or not a number: the general path
			// reads it or gives up.
			d.pos = i
			v, err := d.Int32()
			if err != nil {
				return dst, err
			}
			dst = append(dst, v)
			i = d.pos
			continue
		}
		v := int32(n)
		if neg {
			v = int32(-int64(n))
		}
		dst = append(dst, v)
		i = j
	}
}

// countElems estimates the number of elements of the array whose '[' is
// before b: one more than the commas before the first ']', which is exact
// for an array of numbers. Both scans run at memory speed.
func countElems(b []byte) int {
	end := bytes.IndexByte(b, ']')
	if end < 0 {
		return 0
	}
	return bytes.Count(b[:end], []byte{','}) + 1
}

// Int64s appends an array of int64 values to dst.
func (d *Decoder) Int64s(dst []int64) ([]int64, error) { return readList(d, dst, (*Decoder).Int64) }

// Uint32s appends an array of uint32 values to dst.
func (d *Decoder) Uint32s(dst []uint32) ([]uint32, error) { return readList(d, dst, (*Decoder).Uint32) }

// Uint64s appends an array of uint64 values to dst.
func (d *Decoder) Uint64s(dst []uint64) ([]uint64, error) { return readList(d, dst, (*Decoder).Uint64) }

// Float32s appends an array of float values to dst.
func (d *Decoder) Float32s(dst []float32) ([]float32, error) {
	return readList(d, dst, (*Decoder).Float32)
}

// Float64s appends an array of double values to dst.
func (d *Decoder) Float64s(dst []float64) ([]float64, error) {
	return readList(d, dst, (*Decoder).Float64)
}

// Bools appends an array of bool values to dst.
func (d *Decoder) Bools(dst []bool) ([]bool, error) { return readList(d, dst, (*Decoder).Bool) }

// Strings appends an array of strings to dst.
func (d *Decoder) Strings(dst []string) ([]string, error) { return readList(d, dst, (*Decoder).String) }

// BytesList appends an array of bytes values to dst.
func (d *Decoder) BytesList(dst [][]byte) ([][]byte, error) {
	return readList(d, dst, (*Decoder).Bytes)
}

// quoted reads a JSON string where only a string may stand; anything else
// is for protojson to judge.
func (d *Decoder) quoted() ([]byte, error) {
	if d.peek() != '"' {
		return nil, ErrFallback
	}
	return d.stringBytes()
}
