// Package gittest makes real repositories with the git command for tests:
// bare repositories laid out as the services read them
// (<reposDir>/<owner>/<name>.git), history written with `git fast-import`
// so that commit times (and so walk orders) are exact, refs moved and read
// with git's own plumbing. git is the oracle of the services' own git code
// (which never runs it); a test that needs git is skipped where it is not
// installed.
//
// Every git this package runs is isolated from the machine's configuration
// (no system or global config, a fixed identity) and bounded in time.
package gittest
