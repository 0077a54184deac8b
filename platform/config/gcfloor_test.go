package config_test

import (
	"strings"
	"testing"
)

func TestGCHeapFloor(t *testing.T) {
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.HeapFloor(5); got != 80<<20 {
		t.Errorf("default floor of a process of five services = %d, want 80 MiB", got)
	}
	if got := c.HeapFloor(1); got != 16<<20 {
		t.Errorf("default floor of one service = %d, want 16 MiB", got)
	}
	if got := c.HeapFloor(0); got != 16<<20 {
		t.Errorf("default floor of a process of no service (NATS alone) = %d, want 16 MiB", got)
	}
	for v, want := range map[string]uint64{"0": 0, "1048576": 1 << 20, "80MiB": 80 << 20, "512KiB": 512 << 10, "1GiB": 1 << 30, "2 MiB": 2 << 20} {
		c, err := load(t, map[string]string{"PRSAGA_GC_HEAP_FLOOR": v})
		if err != nil {
			t.Errorf("PRSAGA_GC_HEAP_FLOOR=%s: %v", v, err)
			continue
		}
		if got := c.HeapFloor(5); got != want {
			t.Errorf("PRSAGA_GC_HEAP_FLOOR=%s: floor %d, want %d (whatever the services)", v, got, want)
		}
	}
	for _, v := range []string{"80MB", "-1", "lots", "1.5GiB", "MiB", "99999999999GiB"} {
		_, err := load(t, map[string]string{"PRSAGA_GC_HEAP_FLOOR": v})
		if err == nil || !strings.Contains(err.Error(), "PRSAGA_GC_HEAP_FLOOR") || !strings.Contains(err.Error(), "80MiB") {
			t.Errorf("PRSAGA_GC_HEAP_FLOOR=%s: error %v, want one naming the setting and the form", v, err)
		}
	}
}
