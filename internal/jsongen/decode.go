package jsongen

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// memberNames maps each field of m to the names protojson accepts for it:
// the JSON name, and the proto name when it differs. A name that is one
// field's JSON name and another's proto name belongs to the first, as
// protojson looks JSON names up first.
func memberNames(m *protogen.Message) map[*protogen.Field][]string {
	owner := map[string]*protogen.Field{}
	out := map[*protogen.Field][]string{}
	for _, fd := range m.Fields {
		name := fd.Desc.JSONName()
		if _, taken := owner[name]; !taken {
			owner[name] = fd
			out[fd] = append(out[fd], name)
		}
	}
	for _, fd := range m.Fields {
		name := string(fd.Desc.Name())
		if _, taken := owner[name]; !taken {
			owner[name] = fd
			out[fd] = append(out[fd], name)
		}
	}
	return out
}

// scalarReaders name the Decoder method that reads a value of a scalar
// kind, and listReaders the one that reads a whole array of them.
var scalarReaders = map[protoreflect.Kind]string{
	protoreflect.Int32Kind: "Int32", protoreflect.Sint32Kind: "Int32", protoreflect.Sfixed32Kind: "Int32",
	protoreflect.Uint32Kind: "Uint32", protoreflect.Fixed32Kind: "Uint32",
	protoreflect.Int64Kind: "Int64", protoreflect.Sint64Kind: "Int64", protoreflect.Sfixed64Kind: "Int64",
	protoreflect.Uint64Kind: "Uint64", protoreflect.Fixed64Kind: "Uint64",
	protoreflect.FloatKind: "Float32", protoreflect.DoubleKind: "Float64",
	protoreflect.BoolKind: "Bool", protoreflect.StringKind: "String", protoreflect.BytesKind: "Bytes",
}

var listReaders = map[protoreflect.Kind]string{
	protoreflect.Int32Kind: "Int32s", protoreflect.Sint32Kind: "Int32s", protoreflect.Sfixed32Kind: "Int32s",
	protoreflect.Uint32Kind: "Uint32s", protoreflect.Fixed32Kind: "Uint32s",
	protoreflect.Int64Kind: "Int64s", protoreflect.Sint64Kind: "Int64s", protoreflect.Sfixed64Kind: "Int64s",
	protoreflect.Uint64Kind: "Uint64s", protoreflect.Fixed64Kind: "Uint64s",
	protoreflect.FloatKind: "Float32s", protoreflect.DoubleKind: "Float64s",
	protoreflect.BoolKind: "Bools", protoreflect.StringKind: "Strings", protoreflect.BytesKind: "BytesList",
}

// mapKeyReaders name the pbjson function that parses a map key of a kind
// other than string.
var mapKeyReaders = map[protoreflect.Kind]string{
	protoreflect.Int32Kind: "MapKeyInt32", protoreflect.Sint32Kind: "MapKeyInt32", protoreflect.Sfixed32Kind: "MapKeyInt32",
	protoreflect.Uint32Kind: "MapKeyUint32", protoreflect.Fixed32Kind: "MapKeyUint32",
	protoreflect.Int64Kind: "MapKeyInt64", protoreflect.Sint64Kind: "MapKeyInt64", protoreflect.Sfixed64Kind: "MapKeyInt64",
	protoreflect.Uint64Kind: "MapKeyUint64", protoreflect.Fixed64Kind: "MapKeyUint64",
	protoreflect.BoolKind: "MapKeyBool",
}

// isValue reports whether msg is google.protobuf.Value, the one message
// whose JSON null is a value rather than an absent field.
func isValue(msg *protogen.Message) bool {
	return msg != nil && msg.Desc.FullName() == "google.protobuf.Value"
}

func (w writer) unmarshal(m *protogen.Message) {
	g := w.g
	names := memberNames(m)
	oneofIndex := map[*protogen.Oneof]int{}
	for _, o := range m.Oneofs {
		if !o.Desc.IsSynthetic() {
			oneofIndex[o] = len(oneofIndex)
		}
	}
	g.P()
	g.P("// DecodeProtoJSON reads x, which is empty, as protojson does. See")
	g.P("// package pbjson.")
	g.P("func (x *", m.GoIdent, ") DecodeProtoJSON(d *", w.pbjson("Decoder"), ") error {")
	g.P("if err := d.ObjectStart(); err != nil {")
	g.P("return err")
	g.P("}")
	if len(m.Fields) > 0 {
		// protojson refuses a field given twice, under either name.
		g.P("var seen [", (len(m.Fields)+63)/64, "]uint64")
	}
	if len(oneofIndex) > 0 {
		g.P("var oneofs [", (len(oneofIndex)+63)/64, "]uint64")
	}
	g.P("for first := true; ; first = false {")
	g.P("more, err := d.NextField(first)")
	g.P("if err != nil || !more {")
	g.P("return err")
	g.P("}")
	g.P("name, err := d.Name()")
	g.P("if err != nil {")
	g.P("return err")
	g.P("}")
	if len(m.Fields) > 0 {
		g.P("switch string(name) {")
		for i, fd := range m.Fields {
			var quoted []string
			for _, n := range names[fd] {
				quoted = append(quoted, strconv.Quote(n))
			}
			if len(quoted) == 0 {
				continue // every name taken by other fields
			}
			g.P("case ", strings.Join(quoted, ", "), ":")
			bit(g, "seen", i)
			if !isValue(fd.Message) || fd.Desc.IsList() || fd.Desc.IsMap() {
				g.P("if d.Null() {")
				g.P("continue")
				g.P("}")
			}
			if o := realOneof(fd); o != nil {
				bit(g, "oneofs", oneofIndex[o])
			}
			w.decodeField(fd)
		}
		g.P("default:")
	}
	g.P("if err := d.Unknown(name); err != nil {")
	g.P("return err")
	g.P("}")
	if len(m.Fields) > 0 {
		g.P("}")
	}
	g.P("}")
	g.P("}")
}

// bit writes the check that bit i of set is clear (else the input is
// protojson's to refuse), and sets it.
func bit(g *protogen.GeneratedFile, set string, i int) {
	word, mask := fmt.Sprintf("%s[%d]", set, i/64), fmt.Sprintf("1<<%d", i%64)
	g.P("if ", word, "&(", mask, ") != 0 {")
	g.P("return ", g.QualifiedGoIdent(svcimplPackage.Ident("ErrFallback")))
	g.P("}")
	g.P(word, " |= ", mask)
}

// goType is the Go type of a value of descriptor fd: a scalar, an enum or
// a message pointer.
func (w writer) goType(fd protoreflect.FieldDescriptor, enum *protogen.Enum, msg *protogen.Message) string {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		return w.g.QualifiedGoIdent(enum.GoIdent)
	case protoreflect.MessageKind:
		return "*" + w.g.QualifiedGoIdent(msg.GoIdent)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "int32"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "uint32"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return "int64"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "uint64"
	case protoreflect.FloatKind:
		return "float32"
	case protoreflect.DoubleKind:
		return "float64"
	case protoreflect.BoolKind:
		return "bool"
	case protoreflect.StringKind:
		return "string"
	case protoreflect.BytesKind:
		return "[]byte"
	}
	panic(fmt.Sprintf("jsongen: kind %v", fd.Kind()))
}

// readValue writes code that reads a value of descriptor fd into a new
// variable v and then runs set, unless the value is an enum name the
// decoder discards.
func (w writer) readValue(fd protoreflect.FieldDescriptor, enum *protogen.Enum, msg *protogen.Message, set func()) {
	g := w.g
	switch fd.Kind() {
	case protoreflect.EnumKind:
		g.P("n, ok, err := d.Enum(", w.enumMap(enum, "_value"), ")")
		g.P("if err != nil {")
		g.P("return err")
		g.P("}")
		g.P("if ok {")
		g.P("v := ", g.QualifiedGoIdent(enum.GoIdent), "(n)")
		set()
		g.P("}")
	case protoreflect.MessageKind:
		g.P("v := new(", g.QualifiedGoIdent(msg.GoIdent), ")")
		if w.local[msg] {
			g.P("if err := v.DecodeProtoJSON(d); err != nil {")
		} else {
			g.P("if err := d.Message(v); err != nil {")
		}
		g.P("return err")
		g.P("}")
		set()
	default:
		g.P("v, err := d.", scalarReaders[fd.Kind()], "()")
		g.P("if err != nil {")
		g.P("return err")
		g.P("}")
		set()
	}
}

func (w writer) decodeField(fd *protogen.Field) {
	g := w.g
	x := "x." + fd.GoName
	switch {
	case fd.Desc.IsMap():
		w.decodeMap(fd, x)
	case fd.Desc.IsList():
		if fn, ok := listReaders[fd.Desc.Kind()]; ok {
			g.P("if ", x, ", err = d.", fn, "(", x, "); err != nil {")
			g.P("return err")
			g.P("}")
			return
		}
		g.P("if err := d.ArrayStart(); err != nil {")
		g.P("return err")
		g.P("}")
		g.P("for first := true; ; first = false {")
		g.P("more, err := d.NextElem(first)")
		g.P("if err != nil {")
		g.P("return err")
		g.P("}")
		g.P("if !more {")
		g.P("break")
		g.P("}")
		w.readValue(fd.Desc, fd.Enum, fd.Message, func() { g.P(x, " = append(", x, ", v)") })
		g.P("}")
	case realOneof(fd) != nil:
		g.P("{")
		w.readValue(fd.Desc, fd.Enum, fd.Message, func() {
			g.P("x.", fd.Oneof.GoName, " = &", fd.GoIdent, "{", fd.GoName, ": v}")
		})
		g.P("}")
	case fd.Desc.HasPresence() && fd.Desc.Kind() != protoreflect.MessageKind:
		g.P("{")
		set := func() { g.P(x, " = &v") }
		if fd.Desc.Kind() == protoreflect.BytesKind {
			set = func() { g.P(x, " = v") } // non-nil, even when empty
		}
		w.readValue(fd.Desc, fd.Enum, fd.Message, set)
		g.P("}")
	default:
		g.P("{")
		w.readValue(fd.Desc, fd.Enum, fd.Message, func() { g.P(x, " = v") })
		g.P("}")
	}
}

func (w writer) decodeMap(fd *protogen.Field, x string) {
	g := w.g
	k, v := fd.Message.Fields[0], fd.Message.Fields[1]
	g.P("if err := d.ObjectStart(); err != nil {")
	g.P("return err")
	g.P("}")
	g.P("if ", x, " == nil {")
	g.P(x, " = map[", w.goType(k.Desc, nil, nil), "]", w.goType(v.Desc, v.Enum, v.Message), "{}")
	g.P("}")
	g.P("for first := true; ; first = false {")
	g.P("more, err := d.NextField(first)")
	g.P("if err != nil {")
	g.P("return err")
	g.P("}")
	g.P("if !more {")
	g.P("break")
	g.P("}")
	g.P("name, err := d.Name()")
	g.P("if err != nil {")
	g.P("return err")
	g.P("}")
	if k.Desc.Kind() == protoreflect.StringKind {
		g.P("k := string(name)")
	} else {
		g.P("k, err := ", w.pbjson(mapKeyReaders[k.Desc.Kind()]), "(name)")
		g.P("if err != nil {")
		g.P("return err")
		g.P("}")
	}
	g.P("if _, dup := ", x, "[k]; dup {")
	g.P("return ", w.pbjson("ErrFallback"))
	g.P("}")
	w.readValue(v.Desc, v.Enum, v.Message, func() { g.P(x, "[k] = v") })
	g.P("}")
}
