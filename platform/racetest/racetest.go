// Package racetest starts the contenders of a race test together: two
// ledgers projecting one event, mergers breaking one dead lock. A
// goroutine per contender waits at one start line, and all are released
// at once, so that they meet inside the code under test rather than one
// finishing before the next has started.
package racetest

import "sync"

// AtOnce runs do for every item, each in its own goroutine, all released
// together once every goroutine is started; wait returns when all have
// returned. The caller may do more (a helper process, a kill) before it
// waits.
func AtOnce[T any](items []T, do func(i int, item T)) (wait func()) {
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	start := make(chan struct{})
	for i, item := range items {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-start
			do(i, item)
		}()
	}
	ready.Wait()
	close(start)
	return wg.Wait
}
