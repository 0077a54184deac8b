package gitrefs

import (
	"errors"
	"syscall"
)

// isDir reports reading a directory as a file (a ref that is only a prefix).
func isDir(err error) bool { return errors.Is(err, syscall.EISDIR) }

// isNotDir reports a path through a file ("a/b" when "a" is a ref).
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
