package registry

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// loadAttributes reads attribute_group.go: each `XKey = attribute.Key("k")`
// constant with its doc comment, then each `enum var = XKey.String("v")`.
// The generator writes every registry attribute this way, deprecated ones
// excluded, so a key missing here is not (or no longer) in the registry.
func loadAttributes(path string, namespaces []string) (map[string]Attribute, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	keyOfConst := map[string]string{} // Go constant name -> attribute key
	attrs := map[string]Attribute{}
	for _, spec := range valueSpecs(file, token.CONST) {
		for i, name := range spec.Names {
			key, ok := keyConstant(spec, i)
			if !ok || !inNamespaces(key, namespaces) {
				continue
			}
			a, err := attributeFromDoc(key, spec.Doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			keyOfConst[name.Name] = key
			attrs[key] = a
		}
	}
	for _, spec := range valueSpecs(file, token.VAR) {
		for i := range spec.Names {
			constName, member, ok := enumMember(spec, i)
			if !ok {
				continue
			}
			key, known := keyOfConst[constName]
			if !known {
				continue // another namespace's enum
			}
			a := attrs[key]
			a.Enum = append(a.Enum, member)
			attrs[key] = a
		}
	}
	if len(attrs) == 0 {
		return nil, fmt.Errorf("%s: no attribute of the namespaces %v (has the generator changed its output?)", path, namespaces)
	}
	return attrs, nil
}

func valueSpecs(file *ast.File, tok token.Token) []*ast.ValueSpec {
	var out []*ast.ValueSpec
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != tok {
			continue
		}
		for _, s := range gen.Specs {
			if vs, ok := s.(*ast.ValueSpec); ok {
				out = append(out, vs)
			}
		}
	}
	return out
}

// keyConstant matches `attribute.Key("k")`.
func keyConstant(spec *ast.ValueSpec, i int) (string, bool) {
	if i >= len(spec.Values) {
		return "", false
	}
	call, ok := spec.Values[i].(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", false
	}
	if member, ok := packageMember(call.Fun, "attribute"); !ok || member != "Key" {
		return "", false
	}
	return stringLiteral(call.Args[0])
}

// enumMember matches `XKey.String("v")` or `XKey.Int(3)`.
func enumMember(spec *ast.ValueSpec, i int) (string, EnumMember, bool) {
	if i >= len(spec.Values) {
		return "", EnumMember{}, false
	}
	call, ok := spec.Values[i].(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", EnumMember{}, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", EnumMember{}, false
	}
	recv, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", EnumMember{}, false
	}
	switch sel.Sel.Name {
	case "String":
		v, ok := stringLiteral(call.Args[0])
		return recv.Name, EnumMember{Value: v, Kind: "string"}, ok
	case "Int", "Int64":
		v, ok := intLiteral(call.Args[0])
		return recv.Name, EnumMember{Value: v, Kind: "int"}, ok
	}
	return "", EnumMember{}, false
}

// attributeFromDoc reads the generator's `Type:`, `RequirementLevel:` and
// `Stability:` lines; all three are required so that a change of the
// generator's format fails loudly instead of checking nothing.
func attributeFromDoc(key string, doc *ast.CommentGroup) (Attribute, error) {
	fields := docFields(doc)
	a := Attribute{Key: key, Type: fields["Type"], RequirementLevel: fields["RequirementLevel"], Stability: fields["Stability"]}
	if a.Type == "" || a.RequirementLevel == "" || a.Stability == "" {
		return a, fmt.Errorf("attribute %q: doc comment lacks Type:, RequirementLevel: or Stability:", key)
	}
	return a, nil
}

func docFields(doc *ast.CommentGroup) map[string]string {
	out := map[string]string{}
	if doc == nil {
		return out
	}
	for _, line := range strings.Split(doc.Text(), "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		switch name {
		case "Type", "RequirementLevel", "Stability":
			if _, seen := out[name]; !seen {
				out[name] = strings.TrimSpace(value)
			}
		}
	}
	return out
}

// packageMember is X for an expression pkg.X.
func packageMember(e ast.Expr, pkg string) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	return sel.Sel.Name, ok && id.Name == pkg
}

func stringLiteral(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func intLiteral(e ast.Expr) (string, bool) {
	sign := ""
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		sign, e = "-", u.X
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return "", false
	}
	n, err := strconv.ParseInt(lit.Value, 0, 64)
	if err != nil {
		return "", false
	}
	return sign + strconv.FormatInt(n, 10), true
}
