package experiment

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine describes the machine an experiment ran on.
type Machine struct {
	Hostname    string `json:"hostname"`
	CPUModel    string `json:"cpu_model"`
	Cores       int    `json:"cores"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	GoVersion   string `json:"go_version"`
	MemoryBytes int64  `json:"memory_bytes"`
}

// ReadMachine reads machine facts from the kernel and /proc; facts it cannot
// read stay empty rather than failing the experiment.
func ReadMachine() Machine {
	h := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemoryBytes = int64(si.Totalram) * int64(si.Unit)
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if pretty := osRelease(); pretty != "" {
		h.OS = pretty + " " + h.OS
	}
	return h
}

func osRelease() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
