package ydbcheck

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// fewRows are tables exempt from splitting by load: schema_migrations
// holds a row per migration file and is read at start only.
var fewRows = []string{"schema_migrations"}

// Partitioning lists what is wrong with the tables' partitioning as the
// migrations leave it (docs/ydb.md): every table splits by load; a table
// split in advance (PARTITION_AT_KEYS, n points) keeps at least n+1
// partitions (AUTO_PARTITIONING_MIN_PARTITIONS_COUNT), or the server
// merges the idle ones back and the next burst meets one partition again;
// MAX is not below MIN.
func (s Schema) Partitioning() []error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(s)) {
		t := s[n]
		if slices.Contains(fewRows, n) {
			continue
		}
		if v := t.Settings["AUTO_PARTITIONING_BY_LOAD"]; v != "ENABLED" {
			errs = append(errs, fmt.Errorf("table %s: AUTO_PARTITIONING_BY_LOAD is %q, want ENABLED", n, v))
		}
		lo, hasLo, err := t.count("AUTO_PARTITIONING_MIN_PARTITIONS_COUNT")
		if err != nil {
			errs = append(errs, err)
		}
		hi, hasHi, err := t.count("AUTO_PARTITIONING_MAX_PARTITIONS_COUNT")
		if err != nil {
			errs = append(errs, err)
		}
		if !hasLo {
			lo = 1
		}
		if keys, ok := t.Settings["PARTITION_AT_KEYS"]; ok {
			points := len(splitTop(strings.TrimSuffix(strings.TrimPrefix(keys, "("), ")")))
			if lo < points+1 {
				errs = append(errs, fmt.Errorf("table %s: split at %d keys but AUTO_PARTITIONING_MIN_PARTITIONS_COUNT is %d, want at least %d", n, points, lo, points+1))
			}
		}
		if hasHi && hi < lo {
			errs = append(errs, fmt.Errorf("table %s: AUTO_PARTITIONING_MAX_PARTITIONS_COUNT %d below MIN %d", n, hi, lo))
		}
	}
	return errs
}

func (t *Table) count(setting string) (int, bool, error) {
	v, ok := t.Settings[setting]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, true, fmt.Errorf("table %s: %s = %q is not a number", t.Name, setting, v)
	}
	return n, true, nil
}
