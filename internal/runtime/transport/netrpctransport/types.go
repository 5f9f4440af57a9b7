package netrpctransport

import (
	"encoding/gob"
	"fmt"
	"reflect"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// gobType is what the transport knows about one message type.
type gobType struct {
	// empty is set for a struct with no exported field, which gob refuses
	// to encode ("type has no exported fields"); such a message is not sent
	// (NoMsg) and the receiver keeps its zero value.
	empty bool
	err   error // why the type could not be registered
}

// gobTypes caches the registration of message types, keyed by
// reflect.Type, so the per-call check is one map load.
var gobTypes sync.Map

// registerMessage registers the oneof wrapper types of msg and its
// sub-messages with gob, and notes whether msg has fields gob can encode.
// A oneof is the one interface-typed field of a generated struct, and gob
// must know by name every concrete type an interface can hold; the names
// are "<message full name>.<field name>", the same in every process.
func registerMessage(msg any) *gobType {
	t := reflect.TypeOf(msg)
	if v, ok := gobTypes.Load(t); ok {
		return v.(*gobType)
	}
	gt := &gobType{}
	pm, ok := msg.(proto.Message)
	if !ok {
		gt.err = fmt.Errorf("netrpc: %T is not a protobuf message", msg)
	} else {
		gt.err = registerDesc(pm.ProtoReflect().Type(), map[protoreflect.FullName]bool{})
		gt.empty = !hasExportedField(t.Elem())
	}
	v, _ := gobTypes.LoadOrStore(t, gt)
	return v.(*gobType)
}

func registerDesc(mt protoreflect.MessageType, seen map[protoreflect.FullName]bool) (err error) {
	md := mt.Descriptor()
	if seen[md.FullName()] {
		return nil
	}
	seen[md.FullName()] = true
	m := mt.New()
	goMsg := m.Interface()
	// gob.RegisterName panics on a name clash; report it as an error naming
	// the type instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("netrpc: registering %s with gob: %v", md.FullName(), r)
		}
	}()
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			// A oneof is an interface field in Go: gob must know each
			// wrapper type it can hold. Setting the field makes the
			// message hold one, which reflection then names.
			m.Set(fd, m.NewField(fd))
			if w := oneofWrapper(goMsg, od); w != nil {
				gob.RegisterName(string(md.FullName())+"."+string(fd.Name()), w)
			}
			m.Clear(fd)
		}
		var sub protoreflect.MessageDescriptor
		switch {
		case fd.IsMap():
			sub = fd.MapValue().Message()
		default:
			sub = fd.Message()
		}
		if sub == nil {
			continue
		}
		st, err := protoregistry.GlobalTypes.FindMessageByName(sub.FullName())
		if err != nil {
			return fmt.Errorf("netrpc: message %s of field %s: %w", sub.FullName(), fd.FullName(), err)
		}
		if err := registerDesc(st, seen); err != nil {
			return err
		}
	}
	return nil
}

// oneofWrapper returns the value the Go field of oneof od holds.
func oneofWrapper(goMsg proto.Message, od protoreflect.OneofDescriptor) any {
	v := reflect.ValueOf(goMsg).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("protobuf_oneof") == string(od.Name()) {
			f := v.Field(i)
			if f.IsNil() {
				return nil
			}
			return f.Interface()
		}
	}
	return nil
}

func hasExportedField(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return true
	}
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

// registerService notes the request type of every unary method of desc,
// found through the protobuf registry, and registers the request and
// response types with gob: the server must know them before the first
// request arrives.
func (s *Server) registerService(desc *grpc.ServiceDesc) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(desc.ServiceName))
	if err != nil {
		panic(fmt.Sprintf("netrpc: service %s is not in the protobuf registry, so its message types are unknown: %v", desc.ServiceName, err))
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		panic(fmt.Sprintf("netrpc: %s names a %T, not a service", desc.ServiceName, d))
	}
	for i := 0; i < sd.Methods().Len(); i++ {
		md := sd.Methods().Get(i)
		if md.IsStreamingClient() || md.IsStreamingServer() {
			continue
		}
		var types messageTypes
		for i, name := range []protoreflect.FullName{md.Input().FullName(), md.Output().FullName()} {
			mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
			if err != nil {
				panic(fmt.Sprintf("netrpc: message %s of %s: %v", name, md.FullName(), err))
			}
			msg := mt.New().Interface()
			gt := registerMessage(msg)
			if gt.err != nil {
				panic(gt.err.Error())
			}
			if i == 0 {
				types.in = reflect.TypeOf(msg)
			} else {
				types.out, types.outEmpty = reflect.TypeOf(msg), gt.empty
			}
		}
		s.methods.Store("/"+desc.ServiceName+"/"+string(md.Name()), &types)
	}
}
