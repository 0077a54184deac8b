package gitrefs

// WithoutOpenat2 makes the Dirs opened until restore is called read
// through os.Root alone, as on a kernel without openat2.
func WithoutOpenat2() (restore func()) {
	was := noOpenat2.Swap(true)
	return func() { noOpenat2.Store(was) }
}
