package kube

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// How a load pod's results reach svclab: through the pod's log. After its
// run, `svclab load --shard I/N --dir DIR` in a pod whose environment has
// ResultsEnv prints DIR as a gzipped tar in one PEM block of type
// ResultsPEMType to stdout. The deployer reads each pod's log and unpacks
// the block. This needs no exec into the pod and no volume shared with the
// machine svclab runs on, only the "get pods/log" permission, and it works
// after the pod has ended, as long as the cluster keeps its log.

// ResultsEnv, set in a load pod's environment, makes `svclab load
// --shard` print its result directory to stdout (EmitResults).
const ResultsEnv = "SVCLAB_EMIT_RESULTS"

// ResultsPEMType is the PEM block type of a pod's results.
const ResultsPEMType = "SVCLAB RESULTS"

// maxResultBytes bounds one pod's unpacked results: a run's HDR logs and
// series are kilobytes to a few megabytes (raw samples can be more).
const maxResultBytes = 1 << 30

// EmitResults writes dir's regular files to w as one PEM block, with a
// "Shard" header naming the generator.
func EmitResults(w io.Writer, dir, shard string) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return fmt.Errorf("pack results of %s: %w", dir, err)
	}
	return pem.Encode(w, &pem.Block{Type: ResultsPEMType, Headers: map[string]string{"Shard": shard}, Bytes: buf.Bytes()})
}

// ReadResults finds the results block in a pod's log and unpacks it into
// dest, returning the block's shard. A log without one (the generator
// failed before its end) is an error that quotes the log's last lines.
func ReadResults(log []byte, dest string) (string, error) {
	rest := log
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return "", fmt.Errorf("no results in the log; it ends:\n%s", lastLines(log, 10))
		}
		if b.Type == ResultsPEMType {
			return b.Headers["Shard"], unpack(b.Bytes, dest)
		}
	}
}

func unpack(gz []byte, dest string) error {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	tr := tar.NewReader(zr)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		// filepath.IsLocal refuses "../x" and absolute names: a result
		// file lands inside dest or nowhere.
		if !filepath.IsLocal(h.Name) {
			return fmt.Errorf("results: file %q outside the results directory", h.Name)
		}
		total += h.Size
		if total > maxResultBytes {
			return fmt.Errorf("results: more than %d bytes", maxResultBytes)
		}
		p := filepath.Join(dest, h.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
		_, err = io.CopyN(f, tr, h.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("results: %s: %w", h.Name, err)
		}
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
