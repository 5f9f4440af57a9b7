package cgroup

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/svclab/svclab/internal/english"
)

// Allowed lists the CPUs the calling process may run on, in order.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read the CPU affinity: %w", err)
	}
	var out []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out, nil
}

// Split divides cpus between the load generator and the system under test
// on disjoint sets: a quarter (at least one) for the generator, the rest
// for the system. It fails with fewer than two CPUs, which cannot be split.
func Split(cpus []int) (loadgen, sut []int, err error) {
	if len(cpus) < 2 {
		return nil, nil, fmt.Errorf("%s cannot be split between the load generator and the system under test", english.Count(len(cpus), "CPU"))
	}
	n := max(1, len(cpus)/4)
	return cpus[:n], cpus[n:], nil
}

// List writes CPUs as the kernel's list format, "0-3,6".
func List(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// ParseList reads the kernel's CPU list format ("0-3,6"), as List writes
// it; "" is no CPU.
func ParseList(s string) ([]int, error) {
	var out []int
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("CPU list %q: bad part %q", s, part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
