package protorpctransport

import (
	"net"
	"sync"
)

// frameWriter sends whole frames on a connection for many goroutines,
// without a goroutine of its own: a sender that finds no write in
// progress writes its frame itself, and goes on to write whatever frames
// others queued meanwhile, several in one system call. One call in flight
// thus costs no goroutine hop, and many share system calls instead of
// queueing on a mutex (docs/PERFORMANCE.md has the comparison).
type frameWriter struct {
	nc   net.Conn
	fail func(error) // called when a write fails

	mu      sync.Mutex
	writing bool        // a sender is writing; others only queue
	queue   []*[]byte   // frames waiting for the writing sender
	spare   []*[]byte   // the previous queue's array, for reuse
	iov     net.Buffers // the writing sender's, for reuse
	err     error       // the first write error; later frames are dropped
}

func newFrameWriter(nc net.Conn, fail func(error)) *frameWriter {
	return &frameWriter{nc: nc, fail: fail}
}

// send writes the frame in *bp, or queues it for the sender writing now,
// and returns bp to buffers once written. A write error closes nothing
// itself: it calls fail, once.
func (fw *frameWriter) send(bp *[]byte) {
	fw.mu.Lock()
	fw.queue = append(fw.queue, bp)
	if fw.writing {
		fw.mu.Unlock()
		return
	}
	fw.writing = true
	var failed error
	for len(fw.queue) > 0 {
		batch := fw.queue
		fw.queue = fw.spare[:0]
		err := fw.err
		fw.mu.Unlock()
		if err == nil {
			err = fw.write(batch)
			failed = err
		}
		for i, bp := range batch {
			buffers.Put(bp)
			batch[i] = nil
		}
		fw.mu.Lock()
		if fw.err == nil {
			fw.err = err
		}
		fw.spare = batch[:0]
	}
	fw.writing = false
	fw.mu.Unlock()
	if failed != nil {
		fw.fail(failed)
	}
}

// write sends a batch of frames in one system call where it can.
func (fw *frameWriter) write(batch []*[]byte) error {
	if len(batch) == 1 {
		_, err := fw.nc.Write(*batch[0])
		return err
	}
	iov := fw.iov[:0]
	for _, bp := range batch {
		iov = append(iov, *bp)
	}
	fw.iov = iov
	_, err := iov.WriteTo(fw.nc) // consumes its copy of the slice, not fw.iov
	clear(fw.iov)
	return err
}
