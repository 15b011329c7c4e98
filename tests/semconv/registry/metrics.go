package registry

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// instrumentType is what one generated Go type says about its metric; a
// metric has a synchronous type, an Observable one, or both.
type instrumentType struct {
	instrument string // e.g. Int64UpDownCounter, Float64ObservableCounter
	name, unit string
	required   []string
	optional   []string
}

// loadMetrics reads a namespace's generated instrument package (cicdconv,
// vcsconv, …); a namespace without one (error, test) has no metrics.
func loadMetrics(dir string) (map[string]Metric, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, statErr := os.Stat(dir); errors.Is(statErr, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: no Go file", dir)
	}
	types := map[string]*instrumentType{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		collectInstrumentTypes(file, types)
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				readMethod(fn, types)
			}
		}
	}
	return mergeByName(dir, types)
}

// collectInstrumentTypes finds `type X struct{ metric.Int64Counter }`.
func collectInstrumentTypes(file *ast.File, types map[string]*instrumentType) {
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.TYPE {
			continue
		}
		for _, s := range gen.Specs {
			ts := s.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok || len(st.Fields.List) != 1 || len(st.Fields.List[0].Names) != 0 {
				continue
			}
			instrument, ok := packageMember(st.Fields.List[0].Type, "metric")
			if !ok {
				continue
			}
			types[ts.Name.Name] = &instrumentType{instrument: instrument}
		}
	}
}

// readMethod takes what a method of an instrument type tells: Name() and
// Unit() return the registry's values; the positional attribute
// parameters of Add/Record are the required attributes; an Attr… method
// is optional on a synchronous type, and on an Observable one says in its
// doc comment whether it is required.
func readMethod(fn *ast.FuncDecl, types map[string]*instrumentType) {
	t := types[receiverName(fn)]
	if t == nil || fn.Body == nil {
		return
	}
	switch name := fn.Name.Name; {
	case name == "Name":
		t.name, _ = returnedString(fn)
	case name == "Unit":
		t.unit, _ = returnedString(fn)
	case name == "Add" || name == "Record":
		t.required = append(t.required, positionalAttributes(fn)...)
	case strings.HasPrefix(name, "Attr"):
		for _, key := range attributeKeys(fn.Body, nil) {
			if strings.Contains(fn.Doc.Text(), "returns a required attribute") {
				t.required = append(t.required, key)
			} else {
				t.optional = append(t.optional, key)
			}
		}
	}
}

func receiverName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) != 1 {
		return ""
	}
	e := fn.Recv.List[0].Type
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func returnedString(fn *ast.FuncDecl) (string, bool) {
	if len(fn.Body.List) != 1 {
		return "", false
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return "", false
	}
	return stringLiteral(ret.Results[0])
}

// positionalAttributes are the keys of the `attribute.String("k", p)`
// calls whose value is one of the method's own parameters (not the
// variadic attrs).
func positionalAttributes(fn *ast.FuncDecl) []string {
	params := map[string]bool{}
	for _, field := range fn.Type.Params.List {
		if _, variadic := field.Type.(*ast.Ellipsis); variadic {
			continue
		}
		for _, n := range field.Names {
			params[n.Name] = true
		}
	}
	return attributeKeys(fn.Body, params)
}

// attributeKeys lists the keys of `attribute.X("k", v)` calls in body; with
// params, only those whose v is (a conversion of) one of them.
func attributeKeys(body *ast.BlockStmt, params map[string]bool) []string {
	var keys []string
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		if _, ok := packageMember(call.Fun, "attribute"); !ok {
			return true
		}
		key, ok := stringLiteral(call.Args[0])
		if !ok || (params != nil && !params[valueIdent(call.Args[1])]) {
			return true
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
		return true
	})
	return keys
}

// valueIdent is p in `p` or `string(p)`.
func valueIdent(e ast.Expr) string {
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 {
		e = call.Args[0]
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// mergeByName joins a metric's synchronous and Observable types; they
// must agree on unit and instrument kind.
func mergeByName(dir string, types map[string]*instrumentType) (map[string]Metric, error) {
	out := map[string]Metric{}
	for _, t := range types {
		if t.name == "" {
			continue // not an instrument (no Name method)
		}
		kind := instrumentKind(t.instrument)
		m, seen := out[t.name]
		if !seen {
			m = Metric{Name: t.name, Unit: t.unit, Instrument: kind}
		} else if m.Unit != t.unit || m.Instrument != kind {
			return nil, fmt.Errorf("%s: %s: types disagree: unit %q/%q, instrument %s/%s", dir, t.name, m.Unit, t.unit, m.Instrument, kind)
		}
		m.Required = union(m.Required, t.required)
		m.Optional = union(m.Optional, t.optional)
		out[t.name] = m
	}
	for name, m := range out {
		m.Optional = slices.DeleteFunc(m.Optional, func(k string) bool { return slices.Contains(m.Required, k) })
		out[name] = m
	}
	return out, nil
}

// instrumentKind is the API instrument of a Go type name: Int64Counter and
// Float64ObservableCounter are both a Counter.
func instrumentKind(goInstrument string) string {
	k := strings.TrimPrefix(strings.TrimPrefix(goInstrument, "Int64"), "Float64")
	return strings.TrimPrefix(k, "Observable")
}

func union(a, b []string) []string {
	for _, k := range b {
		if !slices.Contains(a, k) {
			a = append(a, k)
		}
	}
	slices.Sort(a)
	return a
}
