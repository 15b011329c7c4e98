package gitsha

import (
	"net/url"
	"strings"
)

// CanonicalURL is `vcs.repository.url.full` of a remote URL: the
// repository's canonical HTTP(S) address, as the semantic conventions want
// it — no credentials, no port of another protocol, no `.git`, no trailing
// slash:
//
//	https://bot:tok@github.com/o/r.git → https://github.com/o/r
//	git@github.com:o/r.git             → https://github.com/o/r
//	ssh://git@host:2222/o/r.git        → https://host/o/r
//	git://host/o/r                     → https://host/o/r
//
// An http:// remote stays http (and keeps its port). A remote without a
// host (a local path, file://) has no such address: "" (the key is then
// omitted, never guessed).
func CanonicalURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		switch strings.ToLower(u.Scheme) {
		case "https", "http":
			return httpAddress(strings.ToLower(u.Scheme), u.Host, u.Path)
		case "ssh", "git", "git+ssh", "ssh+git":
			return httpAddress("https", u.Hostname(), u.Path)
		}
		return ""
	}
	if strings.Contains(raw, "://") {
		return "" // a URL without a host (file:///…)
	}
	if host, path, ok := scpLike(raw); ok {
		return httpAddress("https", host, path)
	}
	return ""
}

// scpLike splits git's scp-like `[user@]host:path` (no scheme, a colon
// before any slash).
func scpLike(raw string) (host, path string, ok bool) {
	colon := strings.Index(raw, ":")
	slash := strings.Index(raw, "/")
	if colon <= 0 || (slash >= 0 && slash < colon) {
		return "", "", false
	}
	host = raw[:colon]
	if at := strings.LastIndex(host, "@"); at >= 0 {
		host = host[at+1:]
	}
	return host, raw[colon+1:], host != ""
}

func httpAddress(scheme, host, path string) string {
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	out := url.URL{Scheme: scheme, Host: strings.ToLower(host)}
	if path != "" {
		out.Path = "/" + path
	}
	return out.String()
}
