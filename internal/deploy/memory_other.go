//go:build !linux

package deploy

import "github.com/svclab/svclab/internal/spec"

// physicalMemory is unknown here: memory limits are then checked against
// spec.MinMemory alone (cgroups, which enforce them, are Linux's).
func physicalMemory() spec.ByteSize { return 0 }
