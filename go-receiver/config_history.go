package compiletoolsreceiver

import "fmt"

// HistoryConfig: the per-target compile history that gives cache hits
// their time saved and compiles their duration delta (README, Build
// analytics). Kept in the storage extension with the checkpoints.
type HistoryConfig struct {
	// Enabled turns the history on (off by default: the numbers it adds
	// appear only from the second build of a target on).
	Enabled bool `mapstructure:"enabled"`
	// MaxTargets bounds the targets remembered, (host, variant, the
	// rule's source or CAS-free target) each; the least recently built is
	// forgotten first.
	MaxTargets int `mapstructure:"max_targets"`
	// MedianOf is K: a compile's duration delta is taken against the median
	// of its target's last K compiles.
	MedianOf int `mapstructure:"median_of"`

	_ struct{}
}

// maxMedianOf is the core's bound on K (a compile count is a byte there).
const maxMedianOf = 254

func defaultHistoryConfig() HistoryConfig {
	return HistoryConfig{MaxTargets: 100_000, MedianOf: 5}
}

// validate reports the history settings' problems.
func (h HistoryConfig) validate() []error {
	var errs []error
	if h.MaxTargets < 1 {
		errs = append(errs, fmt.Errorf("history.max_targets: must be at least 1, got %d", h.MaxTargets))
	}
	if h.MedianOf < 1 || h.MedianOf > maxMedianOf {
		errs = append(errs, fmt.Errorf("history.median_of: must be 1 to %d, got %d", maxMedianOf, h.MedianOf))
	}
	return errs
}
