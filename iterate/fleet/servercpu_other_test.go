//go:build !linux

package fleet_test

import (
	"testing"
	"time"
)

// backendsCPU reads the backends' CPU time from Linux's /proc only.
func backendsCPU([]uint32) (time.Duration, bool) { return 0, false }

// cpuMeter reads CPU times from Linux's /proc only.
type cpuMeter struct{}

func startCPU() cpuMeter { return cpuMeter{} }

func (cpuMeter) log(t *testing.T, what string, _ int) {
	t.Logf("%s: CPU times are read from Linux's /proc only", what)
}
