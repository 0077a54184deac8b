package service

import "context"

// Vacuumer is a store that gives the pages pruning freed back to the file
// system in bounded steps (platform/sqlite: incremental vacuum), so that
// its file shrinks after a burst instead of keeping its high-water mark.
type Vacuumer interface {
	Vacuum(ctx context.Context) (pages int64, err error)
}

// vacuum runs p's vacuum step after a prune round, when p has one. Each
// of its steps is a short write transaction of its own, like a prune
// batch: the pipeline waits for one step at most.
func vacuum(ctx context.Context, p any) error {
	v, ok := p.(Vacuumer)
	if !ok || ctx.Err() != nil {
		return ctx.Err()
	}
	_, err := v.Vacuum(ctx)
	return err
}
