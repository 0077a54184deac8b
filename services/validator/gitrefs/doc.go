// Package gitrefs reads branch heads from the bare repositories under the
// repos dir (<reposDir>/<owner>/<name>.git) for the validator: the facts
// "does the branch exist" and "where is its head now".
//
// It reads git's files ref backend directly (through platform/gitrefs, the
// reader the merger uses too) rather than through go-git:
// the validator needs exactly one ref per call, read fresh (the merger and
// git itself move refs by lockfile + rename at any time, so nothing is
// cached), and confined to the repos dir through an os.Root, which also
// refuses symlinks that lead outside it.
package gitrefs
