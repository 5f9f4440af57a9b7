package deploy

import (
	"syscall"

	"github.com/svclab/svclab/internal/spec"
)

func physicalMemory() spec.ByteSize {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return spec.ByteSize(uint64(si.Totalram) * uint64(si.Unit))
}
