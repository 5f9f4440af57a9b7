package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// publicRoot is where svclab's public Go API lives: the packages a module
// outside svclab's imports (svc, svc/cli, svc/svcimpl). Everything else is
// under internal/, or is a command, an app or generated code.
const publicRoot = module + "svc"

// TestPublicAPI compares the public packages' exported API, resolved
// through their aliases to what each name is (a struct's fields, an
// interface's methods, a type's methods), with the committed api.txt, so
// that a change to it, even one made in the internal package an alias
// names, shows in review. `go test ./internal/archtest -run
// TestPublicAPI -update` rewrites the file.
func TestPublicAPI(t *testing.T) {
	checkFile(t, "api.txt", publicAPI(t), "the public API", "TestPublicAPI", lineDiff)
}

// publicAPI lists the API of every package under publicRoot, one
// declaration a line, from the compiler's export data.
func publicAPI(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export,Standard", "./svc/...")
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var public []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Export string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if p.ImportPath == publicRoot || strings.HasPrefix(p.ImportPath, publicRoot+"/") {
			public = append(public, p.ImportPath)
		}
	}
	slices.Sort(public)
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var b bytes.Buffer
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		b.WriteString(path + "\n")
		for _, l := range packageAPI(pkg) {
			b.WriteString("\t" + l + "\n")
		}
	}
	return b.Bytes()
}

// packageAPI is one line for each exported name of pkg and, for a type,
// one for each of its fields or interface methods and exported methods.
func packageAPI(pkg *types.Package) []string {
	q := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	var lines []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			lines = append(lines, types.ObjectString(o, q)+" = "+o.Val().ExactString())
		case *types.TypeName:
			lines = append(lines, typeAPI(o, q)...)
		default:
			lines = append(lines, types.ObjectString(o, q))
		}
	}
	return lines
}

// typeAPI describes a type name: what it is (for an alias, what it stands
// for), its fields or interface methods, and its methods.
func typeAPI(o *types.TypeName, q types.Qualifier) []string {
	lines := []string{types.ObjectString(o, q)}
	t := types.Unalias(o.Type())
	name := o.Name()
	switch u := t.Underlying().(type) {
	case *types.Struct:
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() {
				lines = append(lines, fmt.Sprintf("field %s.%s %s", name, f.Name(), types.TypeString(f.Type(), q)))
			}
		}
	case *types.Interface:
		for i := range u.NumMethods() {
			if m := u.Method(i); m.Exported() {
				lines = append(lines, fmt.Sprintf("method %s.%s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), q), "func")))
			}
		}
	default:
		if o.IsAlias() {
			lines = append(lines, fmt.Sprintf("type %s underlying %s", name, types.TypeString(u, q)))
		}
	}
	if _, ok := t.Underlying().(*types.Interface); ok {
		return lines
	}
	ms := types.NewMethodSet(types.NewPointer(t))
	for i := range ms.Len() {
		m := ms.At(i).Obj()
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := name
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			recv = "*" + name
		}
		lines = append(lines, fmt.Sprintf("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(types.TypeString(sig, q), "func")))
	}
	return lines
}

// lineDiff lists the lines only one of want and got has, as a reviewer
// of an API change needs to see them.
func lineDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	var s strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&s, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&s, "+ %s\n", l)
		}
	}
	return s.String()
}
