package spec

import "syscall"

func physicalMemory() ByteSize {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return ByteSize(uint64(si.Totalram) * uint64(si.Unit))
}
