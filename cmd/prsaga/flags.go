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
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

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
	fmt.Fprintf(stderr, "prsaga: %v\n", err)
	return exitUsage
}
