package rebuild

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/prsaga/prsaga/platform/durable"
)

// swap puts the index built in built in place of the live one, keeping
// the live one as old. Where the system can exchange two names in one
// rename (Linux), the live name never stops naming a complete index;
// elsewhere it names none between two renames, and a crash there leaves
// both kept: built is complete, rename it to live.
func swap(live, built, old string) error {
	if err := exchange(live, built); err == nil {
		if err := os.Rename(built, old); err != nil {
			return fmt.Errorf("swapped in, but the old index is left in %s: %w", built, err)
		}
		return durable.Sync(filepath.Dir(live))
	}
	if err := os.Rename(live, old); err != nil {
		return fmt.Errorf("move the old index aside: %w", err)
	}
	if err := os.Rename(built, live); err != nil {
		return fmt.Errorf("the old index is in %s, the new one in %s: rename it to %s: %w", old, built, live, err)
	}
	return durable.Sync(filepath.Dir(live))
}
