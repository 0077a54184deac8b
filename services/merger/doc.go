// Package merger is the saga's pivot step: on a validated event it merges
// the PR's head into the target branch's current head — the point of no
// return — and answers merged (already_merged when the work is found in the
// target already) or step_failed(MERGING). The git work is behind Git; this
// package decides what to emit.
package merger
