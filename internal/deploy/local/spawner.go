package local

import (
	goruntime "runtime"
	"sync"
)

// spawner starts children from one goroutine locked to its OS thread for
// the deployment's life. Linux delivers the parent-death signal when the
// *thread* that forked the child exits, and Go may end a thread whose
// goroutine exits while locked to it (as namespace code does on purpose);
// a thread nobody else can run on is one nobody else can end.
type spawner struct {
	reqs chan func()
	once sync.Once
	// lost is set, from the spawner's own goroutine, when the thread could
	// not be moved back to its network namespace: it then ends with the
	// goroutine rather than serve anyone else.
	lost bool
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan func())}
	go func() {
		goruntime.LockOSThread()
		for f := range s.reqs {
			f()
		}
		if !s.lost {
			goruntime.UnlockOSThread()
		}
	}()
	return s
}

func (s *spawner) do(f func()) {
	done := make(chan struct{})
	s.reqs <- func() { f(); close(done) }
	<-done
}

func (s *spawner) close() { s.once.Do(func() { close(s.reqs) }) }
