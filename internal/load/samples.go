package load

import (
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"
)

// sampleRow is one row of samples.parquet (docs/RESULTS.md).
type sampleRow struct {
	TNs           int64   `parquet:"t_ns"`
	Operation     string  `parquet:"operation,dict"`
	LatencyUs     float64 `parquet:"latency_us"`
	ServiceTimeUs float64 `parquet:"service_time_us"`
	Status        string  `parquet:"status,dict"`
}

// Raw samples leave the recorder in batches through a short queue, so the
// generator's memory holds at most a few batches plus one row group
// however long the run; a writer that falls behind slows recording rather
// than losing samples.
const (
	sampleBatch     = 4096
	sampleQueue     = 8
	samplesPerGroup = 256 * 1024
)

type sampleSink struct {
	f    *os.File
	w    *parquet.GenericWriter[sampleRow]
	buf  []sampleRow
	ch   chan []sampleRow
	free chan []sampleRow
	done chan error
}

func newSampleSink(path string) (*sampleSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating samples file: %w", err)
	}
	s := &sampleSink{
		f:    f,
		w:    parquet.NewGenericWriter[sampleRow](f, parquet.MaxRowsPerRowGroup(samplesPerGroup)),
		buf:  make([]sampleRow, 0, sampleBatch),
		ch:   make(chan []sampleRow, sampleQueue),
		free: make(chan []sampleRow, sampleQueue+1),
		done: make(chan error, 1),
	}
	go s.loop()
	return s, nil
}

// add is called with the recorder's lock held.
func (s *sampleSink) add(row sampleRow) {
	s.buf = append(s.buf, row)
	if len(s.buf) == cap(s.buf) {
		s.ch <- s.buf
		select {
		case b := <-s.free:
			s.buf = b[:0]
		default:
			s.buf = make([]sampleRow, 0, sampleBatch)
		}
	}
}

func (s *sampleSink) loop() {
	var err error
	for b := range s.ch {
		if err == nil {
			_, err = s.w.Write(b)
		}
		select {
		case s.free <- b:
		default:
		}
	}
	s.done <- err
}

// close writes what is left and closes the file.
func (s *sampleSink) close() error {
	if len(s.buf) > 0 {
		s.ch <- s.buf
	}
	close(s.ch)
	err := <-s.done
	if e := s.w.Close(); err == nil {
		err = e
	}
	if e := s.f.Sync(); err == nil {
		err = e
	}
	if e := s.f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", s.f.Name(), err)
	}
	return nil
}
