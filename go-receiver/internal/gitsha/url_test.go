package gitsha

import "testing"

func TestCanonicalURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://user:tok@gitlab.com/g/p.git", "https://gitlab.com/g/p"},
		{"https://oauth2:glpat-x@git.example.com/g/p", "https://git.example.com/g/p"},
		{"https://GitHub.com/o/r/", "https://github.com/o/r"},
		{"https://github.com/o/r.git/", "https://github.com/o/r"},
		{"http://git.local:8080/o/r.git", "http://git.local:8080/o/r"},
		{"ssh://git@bitbucket.org/t/r.git", "https://bitbucket.org/t/r"},
		{"ssh://git@host.example:2222/o/r.git", "https://host.example/o/r"},
		{"git+ssh://git@github.com/o/r", "https://github.com/o/r"},
		{"git://host/o/r", "https://host/o/r"},
		{"git@github.com:acme/geom.git", "https://github.com/acme/geom"},
		{"github.com:acme/geom", "https://github.com/acme/geom"},
		{"/srv/git/geom.git", ""},
		{"../geom", ""},
		{"file:///srv/git/geom.git", ""},
		{"", ""},
	} {
		if got := CanonicalURL(c.in); got != c.want {
			t.Errorf("CanonicalURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
