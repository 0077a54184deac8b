// Package gitloose reads a git directory's loose objects and small files
// with open(2), read(2) and close(2) alone.
//
// A loose object is objects/<2 hex>/<38 hex> holding zlib over "<type>
// <size>\0<content>". go-git's storage reads one with an lstat per path
// element, the poller's fcntl and epoll_ctl calls and an fstat besides the
// open and the read, and does not check the content against its name;
// Read checks it. Packs, alternates and everything else stay go-git's: a
// caller falls back to its storage when Read finds no file.
//
// The merger reads every object of a merge this way, the indexer the
// commits it indexes.
package gitloose
