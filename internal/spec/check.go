package spec

import (
	"cmp"
	"encoding"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType    = reflect.TypeFor[Duration]()
	byteSizeType    = reflect.TypeFor[ByteSize]()
)

// checker compares a table as written with the Go type it decodes into,
// before go-toml does, so that every mistake is reported at its own key
// (load.stages[1].duration, not load.stages) and in the spec's words:
// "must be a number, got "fast"" rather than go-toml's "cannot decode
// TOML string into struct field load.Config.Rate of type float64".
type checker struct {
	s    *Spec
	errs []*Error
}

// check reports every way v, written at key, does not fit t, and returns
// v without its mistakes: kept is what go-toml can decode into t (a
// table with its wrong keys left out, at any depth), and ok is false
// when nothing of v can be kept (a wrong scalar; a list with a wrong
// element, as a list with a hole would mean another list). Decode keeps
// every right key, so that the checks of values after it (an app's
// Validate) see all of them and report their own mistakes in the same
// pass.
func (c *checker) check(key string, v any, t reflect.Type) (kept any, ok bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n := len(c.errs)
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		c.text(key, v, t)
		return v, len(c.errs) == n
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			c.bad(key, "must be a string, got %s%s", Echo(v), c.quoteHint(key, v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.bad(key, "must be true or false, got %s", Echo(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(int64)
		switch {
		case !ok:
			c.bad(key, "must be a whole number, got %s", Echo(v))
		case reflect.Zero(t).OverflowInt(n):
			c.bad(key, "must be between %d and %d, got %d", minInt(t), maxInt(t), n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(int64)
		switch {
		case !ok:
			c.bad(key, "must be a whole number, got %s", Echo(v))
		case n < 0 || reflect.Zero(t).OverflowUint(uint64(n)):
			c.bad(key, "must be between 0 and %d, got %d", maxUint(t), n)
		}
	case reflect.Float32, reflect.Float64:
		switch f := v.(type) {
		case int64:
		case float64:
			if math.IsNaN(f) || math.IsInf(f, 0) {
				c.bad(key, "must be a finite number, got %s", Echo(v))
			} else if t.Kind() == reflect.Float32 && math.Abs(f) > math.MaxFloat32 {
				c.bad(key, "must be at most %g in size, got %s", math.MaxFloat32, Echo(v))
			}
		default:
			c.bad(key, "must be a number, got %s%s", Echo(v), numberHints[key])
		}
	case reflect.Slice, reflect.Array:
		return c.list(key, v, t)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			c.bad(key, "must be a table, got %s", Echo(v))
			return nil, false
		}
		if t.Key().Kind() != reflect.String {
			return v, true // not a shape TOML can fill; go-toml reports it
		}
		out := make(map[string]any, len(m))
		for _, k := range c.keysInFileOrder(key, m) {
			if e, ok := c.check(key+"."+quoteKeyPart(k), m[k], t.Elem()); ok {
				out[k] = e
			}
		}
		return out, true
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			c.bad(key, "must be a table, got %s", Echo(v))
			return nil, false
		}
		fields := structFields(t)
		out := make(map[string]any, len(m))
		for _, k := range c.keysInFileOrder(key, m) {
			f, ok := fields[k]
			if !ok {
				known := slices.Sorted(maps.Keys(fields))
				if key == "deploy" { // the tables deployers decode are keys too
					known = append(known, DeployerTables...)
				}
				c.errs = append(c.errs, c.s.unknownKey(key, k, known))
				continue
			}
			if e, ok := c.check(key+"."+quoteKeyPart(k), m[k], f.Type); ok {
				out[k] = e
			}
		}
		return out, true
	}
	return v, len(c.errs) == n
}

// list is check for a list.
func (c *checker) list(key string, v any, t reflect.Type) (any, bool) {
	list, ok := v.([]any)
	if !ok {
		c.bad(key, "must be a list, got %s", Echo(v))
		return nil, false
	}
	ok = true
	if t.Kind() == reflect.Array && len(list) > t.Len() {
		c.bad(key, "must have at most %d elements, got %d", t.Len(), len(list))
		ok = false
	}
	out := make([]any, len(list))
	for i, e := range list {
		var eok bool
		out[i], eok = c.check(key+"["+strconv.Itoa(i)+"]", e, t.Elem())
		ok = ok && eok
	}
	if !ok {
		return nil, false
	}
	return out, true
}

// text checks a value for a type that parses itself from a string, such
// as Duration, by parsing it, so the type's own error lands on the key.
func (c *checker) text(key string, v any, t reflect.Type) {
	switch x := v.(type) {
	case string:
		u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText([]byte(x)); err != nil {
			c.bad(key, "%v", err)
		}
		return
	case int64, float64:
		if t == durationType {
			// go-toml would take a bare number as nanoseconds, which no
			// one means: 0 is unambiguous, anything else needs a unit.
			if n, ok := x.(int64); ok && n == 0 {
				return
			}
			c.bad(key, "needs a unit, e.g. \"%ss\"", Echo(v))
			return
		}
		if t == byteSizeType {
			c.bad(key, "needs a unit, e.g. \"%sMiB\"", Echo(v))
			return
		}
	}
	c.bad(key, "must be a string, got %s", Echo(v))
}

// quoteHint tells how to give a string key a value --set read as a number
// or a boolean: Set takes `1` and `true` as TOML, as it must for number
// keys, so a string that looks like one has to be quoted in the shell.
func (c *checker) quoteHint(key string, v any) string {
	switch v.(type) {
	case int64, float64, bool:
	default:
		return ""
	}
	if _, flag := c.s.where(key); !strings.HasPrefix(flag, "--set ") {
		return ""
	}
	return fmt.Sprintf("; quote it: --set '%s=\"%s\"'", key, Echo(v))
}

func (c *checker) bad(key, format string, args ...any) {
	line, flag := c.s.where(key)
	c.errs = append(c.errs, &Error{File: c.s.Path, Line: line, Key: key, Flag: flag, Err: fmt.Errorf(format, args...)})
}

// err joins what was found, in file order, at most MaxErrors of it.
func (c *checker) err() error {
	var es Errors
	for _, e := range c.errs {
		es.Add(e)
	}
	return es.Err()
}

// keysInFileOrder lists a table's keys by the line they are written on,
// so errors come in the order a reader meets them.
func (c *checker) keysInFileOrder(key string, m map[string]any) []string {
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int {
		return cmp.Compare(c.s.Line(key+"."+quoteKeyPart(a)), c.s.Line(key+"."+quoteKeyPart(b)))
	})
	return keys
}

// fieldCache holds structFields' answers by type: a plan decodes the
// same few structs once per design point.
var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

// structFields maps the toml keys of struct type t to its fields, the
// fields of embedded structs included, as go-toml decodes them.
func structFields(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := buildStructFields(t)
	fieldCache.Store(t, m)
	return m
}

func buildStructFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && f.Tag.Get("toml") == "" && ft.Kind() == reflect.Struct {
			for k, sf := range buildStructFields(ft) {
				if _, shadowed := out[k]; !shadowed {
					out[k] = sf
				}
			}
			continue
		}
		if name := tagName(f); name != "" {
			out[name] = f
		}
	}
	return out
}

func minInt(t reflect.Type) int64 { return -1 << (t.Bits() - 1) }
func maxInt(t reflect.Type) int64 { return 1<<(t.Bits()-1) - 1 }
func maxUint(t reflect.Type) uint64 {
	return math.MaxUint64 >> (64 - t.Bits())
}
