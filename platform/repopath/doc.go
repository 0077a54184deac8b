// Package repopath is the one place where a repository id from an event or
// a request becomes a file-system path. The validator, the merger and the
// indexer read bare repositories under a repos dir ("owner/name" lives at
// <dir>/<owner>/<name>.git); each resolves ids here so that the rules that
// keep a hostile id inside the repos dir are written, tested and fuzzed
// once (design §3: ids are refused before they touch a path).
package repopath
