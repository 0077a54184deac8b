package sqlite

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"
)

// walVFS is the name of the VFS every store opens its files through: the
// platform's default VFS ("unix" on Linux) with one change, in how a WAL
// file is written.
//
// SQLite writes a WAL frame as two writes, its 24-byte header and then its
// page, each a pwrite(2) of its own: a commit of 20 pages is 40 system
// calls, the largest single share of the stores' (a third of the
// read+write calls per saga, ~7% of the CPU in W1). Through this VFS a WAL
// file gathers writes that follow one another in the file and hands them
// to the default VFS as one write when the commit's last frame is in, so
// that a commit is one pwrite.
//
// Nothing is held back past the point where SQLite could rely on it: what
// is gathered is written before any other operation on that file (a read,
// a sync, a size, a truncation, a file control, close), before a write that
// does not continue it, and within the write call that completes a commit
// frame (a frame whose header carries the database size, which WAL's format
// gives only to the last frame of a transaction, and to the copies of it
// that pad a commit to a sector when synchronous=FULL needs them); from a
// commit frame's header to the next transaction's first frame nothing but
// that header waits for its page. So when SQLite's commit
// returns, every byte it wrote is in the file as it would be without this
// VFS (page cache; fsync'd where synchronous=FULL, since xSync writes first),
// and readers, which look only at frames a committed header counts, never
// find a frame missing. Frames of a transaction that is not committed yet (a
// cache spill) may wait in memory: nothing reads them but the writer itself,
// and its reads write them first. A process that dies loses only what it
// had not committed, as before. Everything but WAL files (the database, the
// -shm, temporary files) is the default VFS's, untouched.
const walVFS = "prsaga-wal"

// walFrameHeader is the size of a WAL frame's header (SQLite's
// WAL_FRAME_HDRSIZE); bytes 4–7 hold, big-endian, the database size in pages
// after the commit on a commit frame and 0 on every other frame.
const walFrameHeader = 24

// walBufMax bounds what one WAL file gathers (a big transaction's spill); a
// write that would pass it writes what is gathered first. One write of the
// default VFS's worth (walWriteMax): gathering more would save no system
// call, since a flush hands it over in pieces of that size anyway, and each
// writing connection would keep up to a MiB of libc heap whose first touch
// costs a page fault per 4 KiB (12–18 µs each on the benchmark's VM).
const walBufMax = walWriteMax

// walWriteMax is the most one write of the default VFS takes: the unix VFS
// writes at most 128 KiB - 1 per pwrite (it masks the length with 0x1ffff,
// so a write of exactly 128 KiB would write nothing and report a full
// disk).
const walWriteMax = 0x1ffff

// walFile is a WAL file opened through walVFS, as it lies in SQLite's
// memory: the sqlite3_file SQLite sees, what is gathered, then the default
// VFS's own file structure.
type walFile struct {
	methods uintptr // sqlite3_file.pMethods: &walMethods
	buf     uintptr // gathered bytes (libc heap), or 0
	cap     int64
	len     int64
	start   int64 // file offset of buf[0]
	// ending is set from a commit frame's header until the next frame that
	// is not a commit frame: what is written meanwhile ends a transaction
	// and is written at once (the header is held for its page alone).
	ending int32
	_      int32
	// Between a database file and its WAL, opened by one connection: the
	// other one's sqlite3_file, or 0.
	peer uintptr
}

const walFileSize = int64(unsafe.Sizeof(walFile{}))

// walWriteLock is the shared-memory lock slot of WAL's one writer
// (SQLite's WAL_WRITE_LOCK).
const walWriteLock = 0

var (
	walOnce    sync.Once
	walErr     error
	walBase    *lib.Tsqlite3_vfs // the default VFS
	walOurs    lib.Tsqlite3_vfs
	walMethods lib.Tsqlite3_io_methods
	dbMethods  lib.Tsqlite3_io_methods // a main database file's: its WAL's peer

	// dbByName finds a connection's database file from its WAL's name:
	// SQLite gives both files' xOpen names from one block, and
	// sqlite3_filename_database maps the WAL's to the database's.
	dbByNameMu sync.Mutex
	dbByName   = map[uintptr]uintptr{}

	// walFlushes counts the writes this VFS handed to the default VFS for
	// gathered bytes, walWrites the writes SQLite asked of WAL files; tests
	// read them.
	walFlushes, walWrites atomic.Int64
)

// registerWALVFS registers walVFS once per process.
func registerWALVFS() error {
	walOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		base := lib.Xsqlite3_vfs_find(tls, 0)
		if base == 0 {
			walErr = fmt.Errorf("sqlite: no default VFS")
			return
		}
		walBase = (*lib.Tsqlite3_vfs)(ptr(base))
		name, err := libc.CString(walVFS)
		if err != nil {
			walErr = fmt.Errorf("sqlite: %w", err)
			return
		}
		walOurs = *walBase
		walOurs.FpNext = 0
		walOurs.FzName = name
		walOurs.FszOsFile = int32(walFileSize) + walBase.FszOsFile
		setFn(&walOurs.FxOpen, walOpen)

		walMethods.FiVersion = 3
		setFn(&walMethods.FxClose, walClose)
		setFn(&walMethods.FxRead, walRead)
		setFn(&walMethods.FxWrite, walWrite)
		setFn(&walMethods.FxTruncate, walTruncate)
		setFn(&walMethods.FxSync, walSync)
		setFn(&walMethods.FxFileSize, walFileSizeFn)
		setFn(&walMethods.FxLock, walLock)
		setFn(&walMethods.FxUnlock, walUnlock)
		setFn(&walMethods.FxCheckReservedLock, walCheckReservedLock)
		setFn(&walMethods.FxFileControl, walFileControl)
		setFn(&walMethods.FxSectorSize, walSectorSize)
		setFn(&walMethods.FxDeviceCharacteristics, walDeviceCharacteristics)
		setFn(&walMethods.FxShmMap, walShmMap)
		setFn(&walMethods.FxShmLock, walShmLock)
		setFn(&walMethods.FxShmBarrier, walShmBarrier)
		setFn(&walMethods.FxShmUnmap, walShmUnmap)
		setFn(&walMethods.FxFetch, walFetch)
		setFn(&walMethods.FxUnfetch, walUnfetch)

		dbMethods = walMethods
		setFn(&dbMethods.FxWrite, innerWrite)
		setFn(&dbMethods.FxShmLock, dbShmLock)
		setFn(&dbMethods.FxClose, dbClose)

		if rc := lib.Xsqlite3_vfs_register(tls, uintptr(unsafe.Pointer(&walOurs)), 0); rc != lib.SQLITE_OK {
			walErr = fmt.Errorf("sqlite: registering VFS %s: code %d", walVFS, rc)
		}
	})
	return walErr
}

// ptr turns an address in SQLite's (libc's) memory, never Go's heap, into a
// pointer.
func ptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// setFn stores Go function f where C expects a function pointer: modernc's
// C functions are Go functions, and a C function pointer is a Go func value.
func setFn[F any](slot *uintptr, f F) { *(*F)(unsafe.Pointer(slot)) = f }

// fn reads the C function pointer p as a Go function of type F.
func fn[F any](p uintptr) F { return *(*F)(unsafe.Pointer(&p)) }

// mem is n bytes at p in SQLite's memory.
func mem(p uintptr, n int) []byte { return unsafe.Slice((*byte)(ptr(p)), n) }

func wal(pFile uintptr) *walFile { return (*walFile)(ptr(pFile)) }

// inner is the default VFS's file inside a walFile.
func inner(pFile uintptr) uintptr { return pFile + uintptr(walFileSize) }

func innerMethods(pFile uintptr) *lib.Tsqlite3_io_methods {
	return (*lib.Tsqlite3_io_methods)(ptr(*(*uintptr)(ptr(inner(pFile)))))
}

func walOpen(tls *libc.TLS, pVfs, zName, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	open := fn[func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32](walBase.FxOpen)
	base := uintptr(unsafe.Pointer(walBase))
	if flags&(lib.SQLITE_OPEN_WAL|lib.SQLITE_OPEN_MAIN_DB) == 0 || zName == 0 {
		// Journals and temporary files: the default VFS's own, in place
		// (walOurs's szOsFile is larger than it needs).
		return open(tls, base, zName, pFile, flags, pOutFlags)
	}
	*wal(pFile) = walFile{}
	rc := open(tls, base, zName, inner(pFile), flags, pOutFlags)
	if rc != lib.SQLITE_OK || *(*uintptr)(ptr(inner(pFile))) == 0 {
		// SQLite calls xClose only on a file whose pMethods is set.
		return rc
	}
	dbByNameMu.Lock()
	defer dbByNameMu.Unlock()
	if flags&lib.SQLITE_OPEN_MAIN_DB != 0 {
		wal(pFile).methods = uintptr(unsafe.Pointer(&dbMethods))
		dbByName[zName] = pFile
		return rc
	}
	wal(pFile).methods = uintptr(unsafe.Pointer(&walMethods))
	if db := dbByName[lib.Xsqlite3_filename_database(tls, zName)]; db != 0 {
		wal(pFile).peer, wal(db).peer = db, pFile
	}
	return rc
}

// dbShmLock is a database file's xShmLock. When the connection lets go of
// WAL's write lock, what its WAL gathered and did not write belongs to a
// transaction that rolled back (a commit writes everything before it
// returns): dropped, so that it can never be written over frames another
// writer appends after this one.
func dbShmLock(tls *libc.TLS, pFile uintptr, offset, n, flags int32) int32 {
	rc := walShmLock(tls, pFile, offset, n, flags)
	if offset == walWriteLock && flags == lib.SQLITE_SHM_UNLOCK|lib.SQLITE_SHM_EXCLUSIVE {
		if w := wal(pFile).peer; w != 0 {
			wal(w).len, wal(w).ending = 0, 0
		}
	}
	return rc
}

func dbClose(tls *libc.TLS, pFile uintptr) int32 {
	dbByNameMu.Lock()
	for name, db := range dbByName {
		if db == pFile {
			delete(dbByName, name)
		}
	}
	if w := wal(pFile).peer; w != 0 {
		wal(w).peer = 0
	}
	dbByNameMu.Unlock()
	return fn[func(*libc.TLS, uintptr) int32](innerMethods(pFile).FxClose)(tls, inner(pFile))
}

// flush writes what pFile gathered, as one write of the default VFS.
func flush(tls *libc.TLS, pFile uintptr) int32 {
	w := wal(pFile)
	if w.len == 0 {
		return lib.SQLITE_OK
	}
	n := w.len
	w.len = 0
	for off := int64(0); off < n; off += walWriteMax {
		walFlushes.Add(1)
		if rc := innerWrite(tls, pFile, w.buf+uintptr(off), int32(min(n-off, walWriteMax)), w.start+off); rc != lib.SQLITE_OK {
			return rc
		}
	}
	return lib.SQLITE_OK
}

func walWrite(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	walWrites.Add(1)
	w := wal(pFile)
	n := int64(iAmt)
	header := n == walFrameHeader
	commitHeader := header && binary.BigEndian.Uint32(mem(zBuf, walFrameHeader)[4:8]) != 0
	if header && !commitHeader {
		w.ending = 0 // a frame of a transaction that has not reached its commit frame
	}
	if w.len > 0 && (iOfst != w.start+w.len || w.len+n > walBufMax) {
		if rc := flush(tls, pFile); rc != lib.SQLITE_OK {
			return rc
		}
	}
	if commitHeader && w.len == 0 {
		// A commit frame's header that continues nothing: SQLite
		// rewriting the checksums of frames it wrote (walRewriteChecksums
		// ends on the commit frame) with no page to follow, a transaction
		// of one frame, or a frame that pads the commit to a sector. Not
		// held back.
		if commitHeader {
			w.ending = 1
		}
		return innerWrite(tls, pFile, zBuf, iAmt, iOfst)
	}
	if w.len+n > w.cap {
		c := max(w.cap*2, 64<<10)
		for c < w.len+n {
			c *= 2
		}
		b := libc.Xrealloc(tls, w.buf, libc.Tsize_t(c))
		if b == 0 {
			return lib.SQLITE_NOMEM
		}
		w.buf, w.cap = b, c
	}
	if w.len == 0 {
		w.start = iOfst
	}
	libc.Xmemcpy(tls, w.buf+uintptr(w.len), zBuf, libc.Tsize_t(n))
	w.len += n
	if commitHeader {
		w.ending = 1 // held for its page, which follows
		return lib.SQLITE_OK
	}
	if w.ending != 0 {
		// A commit frame's page, or anything after it (a frame padding the
		// commit to a sector, split around a sync): the transaction is
		// complete, written now.
		return flush(tls, pFile)
	}
	return lib.SQLITE_OK
}

func innerWrite(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	return fn[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](innerMethods(pFile).FxWrite)(tls, inner(pFile), zBuf, iAmt, iOfst)
}

func walClose(tls *libc.TLS, pFile uintptr) int32 {
	w := wal(pFile)
	// Nothing gathered survives the transaction it belongs to (commits
	// write it, dbShmLock drops the rest).
	w.len = 0
	if w.buf != 0 {
		libc.Xfree(tls, w.buf)
		w.buf, w.cap = 0, 0
	}
	dbByNameMu.Lock()
	if w.peer != 0 {
		wal(w.peer).peer = 0
	}
	dbByNameMu.Unlock()
	return fn[func(*libc.TLS, uintptr) int32](innerMethods(pFile).FxClose)(tls, inner(pFile))
}

func walRead(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	if rc := flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](innerMethods(pFile).FxRead)(tls, inner(pFile), zBuf, iAmt, iOfst)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size int64) int32 {
	if rc := flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, int64) int32](innerMethods(pFile).FxTruncate)(tls, inner(pFile), size)
}

// flushThen writes what pFile gathered, then calls the default VFS's method
// m, one of those taking an int (xSync, xLock, xUnlock).
func flushThen(tls *libc.TLS, pFile, m uintptr, arg int32) int32 {
	if rc := flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, int32) int32](m)(tls, inner(pFile), arg)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	return flushThen(tls, pFile, innerMethods(pFile).FxSync, flags)
}

func walFileSizeFn(tls *libc.TLS, pFile, pSize uintptr) int32 {
	if rc := flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, uintptr) int32](innerMethods(pFile).FxFileSize)(tls, inner(pFile), pSize)
}

func walLock(tls *libc.TLS, pFile uintptr, lock int32) int32 {
	return flushThen(tls, pFile, innerMethods(pFile).FxLock, lock)
}

func walUnlock(tls *libc.TLS, pFile uintptr, lock int32) int32 {
	return flushThen(tls, pFile, innerMethods(pFile).FxUnlock, lock)
}

func walCheckReservedLock(tls *libc.TLS, pFile, pResOut uintptr) int32 {
	return fn[func(*libc.TLS, uintptr, uintptr) int32](innerMethods(pFile).FxCheckReservedLock)(tls, inner(pFile), pResOut)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	if rc := flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, int32, uintptr) int32](innerMethods(pFile).FxFileControl)(tls, inner(pFile), op, pArg)
}

func walSectorSize(tls *libc.TLS, pFile uintptr) int32 {
	return fn[func(*libc.TLS, uintptr) int32](innerMethods(pFile).FxSectorSize)(tls, inner(pFile))
}

func walDeviceCharacteristics(tls *libc.TLS, pFile uintptr) int32 {
	return fn[func(*libc.TLS, uintptr) int32](innerMethods(pFile).FxDeviceCharacteristics)(tls, inner(pFile))
}

// The shared-memory and fetch methods belong to database files; a WAL file
// passes them on in case SQLite ever asks.

func walShmMap(tls *libc.TLS, pFile uintptr, iPg, pgsz, bExtend int32, pp uintptr) int32 {
	m := innerMethods(pFile)
	if m.FiVersion < 2 || m.FxShmMap == 0 {
		return lib.SQLITE_IOERR_SHMMAP
	}
	return fn[func(*libc.TLS, uintptr, int32, int32, int32, uintptr) int32](m.FxShmMap)(tls, inner(pFile), iPg, pgsz, bExtend, pp)
}

func walShmLock(tls *libc.TLS, pFile uintptr, offset, n, flags int32) int32 {
	m := innerMethods(pFile)
	if m.FiVersion < 2 || m.FxShmLock == 0 {
		return lib.SQLITE_IOERR_SHMLOCK
	}
	return fn[func(*libc.TLS, uintptr, int32, int32, int32) int32](m.FxShmLock)(tls, inner(pFile), offset, n, flags)
}

func walShmBarrier(tls *libc.TLS, pFile uintptr) {
	m := innerMethods(pFile)
	if m.FiVersion < 2 || m.FxShmBarrier == 0 {
		return
	}
	fn[func(*libc.TLS, uintptr)](m.FxShmBarrier)(tls, inner(pFile))
}

func walShmUnmap(tls *libc.TLS, pFile uintptr, deleteFlag int32) int32 {
	m := innerMethods(pFile)
	if m.FiVersion < 2 || m.FxShmUnmap == 0 {
		return lib.SQLITE_OK
	}
	return fn[func(*libc.TLS, uintptr, int32) int32](m.FxShmUnmap)(tls, inner(pFile), deleteFlag)
}

func walFetch(tls *libc.TLS, pFile uintptr, iOfst int64, iAmt int32, pp uintptr) int32 {
	m := innerMethods(pFile)
	*(*uintptr)(ptr(pp)) = 0
	if m.FiVersion < 3 || m.FxFetch == 0 {
		return lib.SQLITE_OK
	}
	if rc := flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, int64, int32, uintptr) int32](m.FxFetch)(tls, inner(pFile), iOfst, iAmt, pp)
}

func walUnfetch(tls *libc.TLS, pFile uintptr, iOfst int64, p uintptr) int32 {
	m := innerMethods(pFile)
	if m.FiVersion < 3 || m.FxUnfetch == 0 {
		return lib.SQLITE_OK
	}
	return fn[func(*libc.TLS, uintptr, int64, uintptr) int32](m.FxUnfetch)(tls, inner(pFile), iOfst, p)
}
