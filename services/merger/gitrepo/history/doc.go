// Package history walks a repository's commits: an in-memory commit graph
// kept between merges, with git's merge-base walk over it (graph.go), and
// rev-list for the subjects of a squash (revlist.go). The walks check
// their context as they read commits.
package history
