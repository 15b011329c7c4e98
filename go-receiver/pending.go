package compiletoolsreceiver

import (
	"sync"
	"time"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// pendingBuild is what the receiver knows of a finished build it has not
// settled yet. It lives in memory: after a restart a half-delivered build is
// sent again whole, which deterministic IDs make an exact duplicate.
type pendingBuild struct {
	delivered    ffi.Signals // signals every consumer of which accepted the build
	attempts     int         // failed delivery attempts so far
	firstFailure time.Time   // start of the retry budget (max_elapsed_time)
	nextAttempt  time.Time   // retry backoff
	gitSHA       string      // HEAD read when the build was first seen, if in time
	gitChecked   bool
}

type pendingBuilds struct {
	mu       sync.Mutex
	m        map[string]*pendingBuild
	problems map[string]bool
}

func newPendingBuilds() *pendingBuilds {
	return &pendingBuilds{m: map[string]*pendingBuild{}, problems: map[string]bool{}}
}

// firstProblem reports whether a problem with key is new: warn once, not every poll.
func (p *pendingBuilds) firstProblem(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.problems[key] {
		return false
	}
	p.problems[key] = true
	return true
}

func (p *pendingBuilds) update(dir string, f func(*pendingBuild)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.m[dir]
	if !ok {
		b = &pendingBuild{}
		p.m[dir] = b
	}
	f(b)
}

func (p *pendingBuilds) snapshot(dir string) pendingBuild {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.m[dir]; ok {
		return *b
	}
	return pendingBuild{}
}

func (p *pendingBuilds) remove(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, dir)
}
