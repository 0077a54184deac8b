package repopath

import (
	"os"
	"syscall"
)

func stampOf(fi os.FileInfo) dirStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirStamp{}
	}
	return dirStamp{dev: st.Dev, ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
