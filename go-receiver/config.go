package compiletoolsreceiver

import (
	"errors"
	"fmt"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Config is the receiver's configuration (see README.md for every key).
type Config struct {
	// Include lists doublestar globs of diagnostics parents (directories that
	// hold invocation directories) or of invocation directories themselves.
	Include []string `mapstructure:"include"`
	// Exclude lists doublestar globs of invocation directories to ignore.
	Exclude []string `mapstructure:"exclude"`
	// PollInterval is how often the include globs are scanned.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// HostName is `host.name` (and part of the trace id); default: os.Hostname().
	HostName string `mapstructure:"host_name"`
	// ServiceName is `service.name`.
	ServiceName string `mapstructure:"service_name"`
	// ResourceAttributes are added to every build's resource; built-in keys win.
	ResourceAttributes map[string]string `mapstructure:"resource_attributes"`

	// prevent unkeyed literal initialization
	_ struct{}
}

func createDefaultConfig() *Config {
	return &Config{
		PollInterval: 5 * time.Second,
		ServiceName:  "compiletools",
	}
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Include) == 0 {
		errs = append(errs, errors.New("include: at least one glob of a diagnostics directory is required"))
	}
	for i, p := range c.Include {
		if p == "" {
			errs = append(errs, fmt.Errorf("include[%d]: empty pattern", i))
		} else if !doublestar.ValidatePathPattern(p) {
			errs = append(errs, fmt.Errorf("include[%d]: invalid glob %q", i, p))
		}
	}
	for i, p := range c.Exclude {
		if p == "" {
			errs = append(errs, fmt.Errorf("exclude[%d]: empty pattern", i))
		} else if !doublestar.ValidatePathPattern(p) {
			errs = append(errs, fmt.Errorf("exclude[%d]: invalid glob %q", i, p))
		}
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("poll_interval: must be positive, got %s", c.PollInterval))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("service_name: must not be empty"))
	}
	return errors.Join(errs...)
}
