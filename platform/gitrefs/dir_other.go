//go:build !linux

package gitrefs

import "os"

func openFast(string) int { return -1 }

func closeFast(int) {}

func openBeneath(int, string) (*os.File, error) { return nil, errUnsupported }

func readBeneath(int, string) ([]byte, error) { return nil, errUnsupported }
