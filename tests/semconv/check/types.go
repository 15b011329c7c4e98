package check

import (
	"strings"

	"github.com/compiletools-otel/semconvcheck/otlp"
	"github.com/compiletools-otel/semconvcheck/registry"
)

// wantKind is the OTLP value kind that the registry's type means ("" for
// any): an enum's values have its members' kind.
func wantKind(a registry.Attribute) string {
	t := a.Type
	switch {
	case t == "any":
		return ""
	case t == "Enum":
		if len(a.Enum) > 0 {
			return a.Enum[0].Kind
		}
		return "string"
	}
	return t
}

// kindMatches is whether v has the kind the registry wants; an empty
// array fits any array type.
func kindMatches(want string, v otlp.AnyValue) bool {
	got := v.Kind()
	return want == "" || got == want || (got == "[]" && strings.HasSuffix(want, "[]"))
}
