package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/prsaga/prsaga/platform/config"
)

// parseInterspersed parses flags that may follow positional arguments
// (`prsaga status acme/widgets#42 --json`) and returns the positionals.
// The flag package's own printing is silenced: --help prints the verb's
// help (helpFor), a bad flag comes back as a usageError, printed once.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(out, fs)
				return nil, err
			}
			return nil, usageError{verb: fs.Name(), err: err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageError is a bad flag: the one problem and where to get help, not the
// whole flag list.
type usageError struct {
	verb string // "prsaga merge"
	err  error
}

func (e usageError) Error() string {
	return fmt.Sprintf("%s: %v\nrun `%s --help` for its flags", e.verb, e.err, e.verb)
}

func (e usageError) Unwrap() error { return e.err }

// newFlags returns a flag set bound to the configuration.
func newFlags(name string, getenv func(string) string, stderr io.Writer) (*flag.FlagSet, func() (config.Config, error)) {
	fs := flag.NewFlagSet("prsaga "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs, config.Bind(fs, getenv)
}

// parseError reports a flag or config error; -help is a success.
func parseError(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, ue.Error())
		return exitUsage
	}
	fmt.Fprintf(stderr, "prsaga: %v\n", err)
	return exitUsage
}

// parseVerb parses a verb's args as parseConfig does, and refuses them when
// usage holds for the positionals and the flags parsed: use is printed.
// When ok is false the verb stops with exit code code (0 after --help).
func parseVerb(fs *flag.FlagSet, load func() (config.Config, error), args []string, use string, stderr io.Writer, usage func(pos []string) bool) (cfg config.Config, code int, ok bool) {
	pos, cfg, err := parseConfig(fs, load, args)
	if err != nil {
		return cfg, parseError(err, stderr), false
	}
	if usage(pos) {
		fmt.Fprintln(stderr, use)
		return cfg, exitUsage, false
	}
	return cfg, exitOK, true
}

// parseConfig parses args as parseInterspersed does, then loads the
// configuration the flags complete; parseError reports either error.
func parseConfig(fs *flag.FlagSet, load func() (config.Config, error), args []string) ([]string, config.Config, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, config.Config{}, err
	}
	cfg, err := load()
	return pos, cfg, err
}
