package runner

// OnLinger makes f run each time a worker starts waiting for more of its
// batch, until the returned restore is called.
func OnLinger(f func()) (restore func()) {
	lingerHook.Store(&f)
	return func() { lingerHook.Store(nil) }
}

// ConsumeError is consumeError.
var ConsumeError = consumeError

// PullMax is pullMax; MaxPullAhead is maxPullAhead.
var PullMax, MaxPullAhead = pullMax, maxPullAhead
