package reflock

// LocalFS is localFS, for tests that must know whether spares apply.
var LocalFS = localFS
