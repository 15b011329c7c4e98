package pipelinename

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct{ configured, workTree, dir, want string }{
		{"Build and Test", "/src/geom", "/src/geom/bin/gcc.debug/diagnostics/20261130T034340-1", "Build and Test"},
		{"", "/src/geom", "/elsewhere/diag/20261130T034340-1", "geom"},
		// compiletools' default layout: the project directory.
		{"", "", "/home/dev/src/geom/bin/gcc.cxx20.debug/diagnostics/20261130T034340-1", "geom"},
		{"", "", "/home/dev/src/geom/src/bin/gcc.debug/diagnostics/20261130T034340-1", "src"},
		// An explicit diagnostics directory: its own name.
		{"", "", "/home/dev/runs/10-textkit/diag/20261130T034407-25356", "diag"},
		// ... unless it is called diagnostics: the directory holding it.
		{"", "", "/var/ct/diagnostics/20261130T034407-25356", "ct"},
		{"", "", "/corpus/cases/01-geom-shake-cold/diagnostics/20261130T034340-24175", "01-geom-shake-cold"},
		{"", "", "/bin/x/diagnostics/20261130T034407-25356", "x"},
		{"", "", "/diagnostics/20261130T034407-25356", "diagnostics"},
		{"", "", "/20261130T034407-25356", Default},
		{"", "", "20261130T034407-25356", Default},
	} {
		if got := Of(c.configured, c.workTree, c.dir); got != c.want {
			t.Errorf("Of(%q, %q, %q) = %q, want %q", c.configured, c.workTree, c.dir, got, c.want)
		}
	}
}
