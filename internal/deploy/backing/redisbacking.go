package backing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svclab/svclab/internal/deploy/backing/redis"
	"github.com/svclab/svclab/internal/runtime"
)

// RedisMaxMemory is the Redis server's fixed memory limit, the same in
// every run.
const RedisMaxMemory = "256mb"

// checkRedis reports whether b, a Redis backing service of topo's app, is
// declared as svclab runs it and, when local, can run here.
func checkRedis(topo *runtime.Topology, b runtime.Backing, local bool) error {
	if b.Setup != "" {
		return fmt.Errorf("app %s: backing service %q of kind %s has a Setup, but a Redis server starts every run empty", topo.App.Name, b.Name, b.Kind)
	}
	if !local {
		return nil
	}
	if err := redis.Check(); err != nil {
		return fmt.Errorf("app %s needs Redis for its backing service %q: %w", topo.App.Name, b.Name, err)
	}
	return nil
}

// startRedis returns the pool's Redis server, starting it on first use.
// One server holds every Redis backing service of the experiment; each
// deployment starts with it flushed, so runs are independent.
func (p *Pool) startRedis(ctx context.Context, b runtime.Backing) (*redis.Server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("backing: pool is closed")
	}
	if p.redis == nil {
		start := time.Now()
		s, err := redis.Start(ctx, redis.Options{MaxMemory: RedisMaxMemory})
		if err != nil {
			return nil, fmt.Errorf("backing service %s: %w", b.Name, err)
		}
		p.redis = s
		fmt.Fprintf(p.log, "backing: Redis started in %s (pid %d, %s)\n", time.Since(start).Round(time.Millisecond), s.PID(), s.Dir())
	}
	return p.redis, nil
}

// acquireRedis flushes the Redis server and returns b's address.
func (p *Pool) acquireRedis(ctx context.Context, b runtime.Backing) (string, error) {
	s, err := p.startRedis(ctx, b)
	if err != nil {
		return "", err
	}
	if err := s.Flush(ctx); err != nil {
		return "", fmt.Errorf("backing service %s: %w", b.Name, err)
	}
	return s.Addr(), nil
}

// closeRedis stops the Redis server; the caller holds p.mu.
func (p *Pool) closeRedis(ctx context.Context) error {
	if p.redis == nil {
		return nil
	}
	err := p.redis.Stop(ctx)
	fmt.Fprintf(p.log, "backing: Redis (pid %d) stopped\n", p.redis.PID())
	p.redis = nil
	return err
}

// sweepRedis removes what Redis servers of dead svclab processes left.
func sweepRedis() ([]string, error) {
	rs, err := redis.Sweep()
	var out []string
	for _, r := range rs {
		s := fmt.Sprintf("%s (its svclab, %s, is gone)", r.Path, r.Owner)
		if r.Killed > 0 {
			s += fmt.Sprintf("; killed its redis-server, pid %d", r.Killed)
		}
		out = append(out, s)
	}
	return out, err
}
