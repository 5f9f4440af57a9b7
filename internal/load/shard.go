package load

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/spec"
)

// MaxGenerators bounds load.generators: each generator is a process with
// its own connections, and beyond a few dozen the merge of their
// per-second histograms, not the load, becomes the work.
const MaxGenerators = 64

// Shard names one generator of several: the Index-th (from 0) of Count.
// The zero value is the only generator.
type Shard struct {
	Index, Count int
}

// String is the form --shard takes, "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, max(s.Count, 1)) }

// ParseShard reads "I/N", with 0 <= I < N <= MaxGenerators.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("want I/N, this generator's number from 0 and how many there are (e.g. 0/2), got %q", v)
	}
	if n < 1 || n > MaxGenerators {
		return Shard{}, fmt.Errorf("N must be between 1 and %d, got %q", MaxGenerators, v)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("I must be between 0 and N-1 (%d), got %q", n-1, v)
	}
	return Shard{Index: i, Count: n}, nil
}

// GeneratorCount is load.generators, 1 when it is not set.
func (c *Config) GeneratorCount() int {
	if c.Generators == nil {
		return 1
	}
	return *c.Generators
}

// checkGenerators checks load.generators and that every value it splits
// leaves each generator a share: a generator with no users or no requests
// would not run at all, or (requests = 0) without a limit.
func (c *Config) checkGenerators() []error {
	if c.Generators == nil {
		return nil
	}
	n := *c.Generators
	bad := func(format string, args ...any) []error {
		return []error{keyErr("generators", format, args...)}
	}
	switch {
	case n < 1 || n > MaxGenerators:
		return bad("must be between 1 and %d generator processes, got %d", MaxGenerators, n)
	case c.mode() == Closed && c.Users > 0 && c.Users < n:
		return bad("%d closed-loop users cannot be split over %d generators: give at least one user each", c.Users, n)
	case c.Requests > 0 && c.Requests < int64(n):
		return bad("a limit of %d requests cannot be split over %d generators: give at least one each", c.Requests, n)
	case c.Connections > 0 && c.Connections < n:
		return bad("%d connections cannot be split over %d generators: give at least one each", c.Connections, n)
	}
	return nil
}

// Share is the configuration of generator s of s.Count: its part of the
// load, such that the generators together offer what c asks.
//
//   - open loop: the rate (the warm-up's and every stage's too) divided
//     by N; with constant
//     arrivals Options.Shard shifts each generator's schedule by I/N of
//     its own gap, so that the N schedules interleave into one at the
//     full rate; Poisson arrivals get independent streams (a seed of
//     their own), and N independent Poisson streams at rate/N are one at
//     the rate;
//   - closed loop: users (and every stage's) split, the remainder going
//     to the first generators, and spawn_rate in proportion;
//   - requests and connections split as users are;
//   - seed: generator I's is derived from c's, so that the run is
//     repeatable and no two generators draw the same numbers.
//
// The duration, warm-up and everything else are the same for all.
func (c Config) Share(s Shard) Config {
	n := max(s.Count, 1)
	if n == 1 {
		c.Generators = nil
		return c
	}
	i := s.Index
	split := func(v int64) int64 {
		q := v / int64(n)
		if int64(i) < v%int64(n) {
			q++
		}
		return q
	}
	out := c
	out.Generators = nil
	out.Rate = c.Rate / float64(n)
	out.WarmupRate = c.WarmupRate / float64(n)
	out.Users = int(split(int64(c.Users)))
	out.Requests = split(c.Requests)
	out.Connections = int(split(int64(c.Connections)))
	if c.SpawnRate > 0 {
		if c.Users > 0 {
			out.SpawnRate = c.SpawnRate * float64(out.Users) / float64(c.Users)
		} else {
			out.SpawnRate = c.SpawnRate / float64(n)
		}
	}
	out.Stages = make([]Stage, len(c.Stages))
	for k, st := range c.Stages {
		st.Rate /= float64(n)
		st.Users = int(split(int64(st.Users)))
		out.Stages[k] = st
	}
	if len(c.Stages) == 0 {
		out.Stages = nil
	}
	if c.Seed != 0 && i > 0 {
		// The golden-ratio increment spreads consecutive indices over the
		// seed space (SplitMix64's step); 0 would mean "from the clock".
		out.Seed = int64(uint64(c.Seed) + uint64(i)*0x9E3779B97F4A7C15)
		if out.Seed == 0 {
			out.Seed = 1
		}
	}
	return out
}

// phase is how far, in arrivals of its own schedule, generator s's
// constant-rate schedule is shifted: I/N.
func (s Shard) phase() float64 {
	if s.Count <= 1 {
		return 0
	}
	return float64(s.Index) / float64(s.Count)
}

// waitUntil blocks until t (wall clock), or ctx ends.
func waitUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func keyErr(key, format string, args ...any) error {
	return &spec.KeyError{Key: "load." + key, Msg: fmt.Sprintf(format, args...)}
}
