package gitsha

import (
	"bufio"
	"bytes"
	"net/url"
	"strings"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

// Ref types of `vcs.ref.head.type`.
const (
	RefBranch = "branch"
	RefTag    = "tag"
)

// Repo is what the receiver reports of the git work tree above a build.
type Repo struct {
	// WorkTree is the directory holding `.git` (the work tree's root).
	WorkTree string
	// Head is the commit HEAD points at ("" for an unborn branch).
	Head string
	// RefName and RefType: the branch or tag HEAD points to; empty when
	// HEAD is detached (also after `git checkout <tag>`: git detaches
	// there, and which of the names of that commit was meant is unknown).
	RefName, RefType string
	// OriginURL is the `origin` remote's canonical HTTP(S) address
	// (CanonicalURL: no credentials, no `.git`); "" without an origin or
	// for a remote without a host (a local path).
	OriginURL string
	// Provider is `vcs.provider.name` when the origin's host makes it
	// obvious (github.com → github, …), else "".
	Provider string
}

// WorkTree returns the root of the git work tree containing start.
func WorkTree(start string) (string, error) {
	found, err := findDotGit(start)
	if err != nil {
		return "", err
	}
	found.Close()
	return found.name, nil
}

// Inspect reads HEAD, the ref it names and the origin remote of the
// repository containing start, without running git.
func Inspect(start string) (Repo, error) {
	found, err := findDotGit(start)
	if err != nil {
		return Repo{}, err
	}
	defer found.Close()
	dirs, err := openGitDirs(found)
	if err != nil {
		return Repo{}, err
	}
	defer dirs.Close()
	r := Repo{WorkTree: found.name}
	if sha, err := resolve(dirs, "HEAD", 0); err == nil {
		r.Head = sha
	}
	if b, err := readSmallAt(dirs.git, "HEAD"); err == nil {
		if target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref:"); ok {
			target = strings.TrimSpace(target)
			if name, ok := strings.CutPrefix(target, "refs/heads/"); ok {
				r.RefName, r.RefType = name, RefBranch
			} else if name, ok := strings.CutPrefix(target, "refs/tags/"); ok {
				r.RefName, r.RefType = name, RefTag
			}
		}
	}
	r.OriginURL = CanonicalURL(originURL(dirs.common))
	r.Provider = ProviderOf(r.OriginURL)
	return r, nil
}

// originURL reads `url` of `[remote "origin"]` from the common directory's
// config file.
func originURL(common *dirfd.Dir) string {
	b, err := readSmallAt(common, "config")
	if err != nil {
		return ""
	}
	inOrigin := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section := strings.Join(strings.Fields(strings.Trim(line, "[]")), " ")
			inOrigin = section == `remote "origin"`
			continue
		}
		if !inOrigin {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if ok && strings.EqualFold(strings.TrimSpace(key), "url") {
			return strings.Trim(strings.TrimSpace(value), `"`)
		}
	}
	return ""
}

// providers maps hosts to `vcs.provider.name`.
var providers = map[string]string{
	"github.com":    "github",
	"gitlab.com":    "gitlab",
	"bitbucket.org": "bitbucket",
	"codeberg.org":  "gitea",
	"gitea.com":     "gitea",
}

// ProviderOf returns the provider of a repository address whose host is
// a known public service, or "" (a self-hosted server's software is not
// obvious from its name).
func ProviderOf(remote string) string {
	host := ""
	if u, err := url.Parse(remote); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if h, _, ok := strings.Cut(remote, ":"); ok && !strings.Contains(h, "/") {
		host = h
	}
	return providers[strings.ToLower(host)]
}
