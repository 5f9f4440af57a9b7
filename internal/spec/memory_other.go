//go:build !linux

package spec

// physicalMemory is unknown here: memory limits are then checked against
// MinMemory alone (cgroups, which enforce them, are Linux's).
func physicalMemory() ByteSize { return 0 }
