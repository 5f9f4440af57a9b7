package hostentry

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// releaseStartPages gives back the pages of the executable's read-only
// mappings (code, read-only data, the function tables) that package init
// and start-up mapped, and has the host map again, one page at a time,
// only those it touches from then on. They stay in the page cache, shared
// by every process that maps them. On a read fault of a cached file the
// kernel maps the whole 64 KiB window around the page (fault-around), so a
// page touched is sixteen mapped: `svclab host` links every role of
// svclab, and a host of a split synth topology mapped 42-62 MiB of the
// 123 MB binary after start and, with the pages dropped but fault-around
// on, mapped about 20 MiB again while it served (docs/PERFORMANCE.md). It
// takes about a millisecond. (The heap's free pages are not worth a
// forced collection: debug.FreeOSMemory gave back less than 0.6 MiB and
// took 10-80 ms.)
//
// Where the kernel refuses what stops fault-around (see noFaultAround),
// the pages are still dropped and the error says why the rest was not
// done.
func releaseStartPages() error {
	spans, err := readOnlySpans("/proc/self/smaps", "/proc/self/exe")
	if err != nil {
		return err
	}
	if err := dropPages(spans); err != nil {
		return err
	}
	return noFaultAround(spans)
}

// span is a mapping's address range, [start, end).
type span struct{ start, end uintptr }

// readOnlySpans returns exe's private mappings that cannot be written and
// hold no anonymous page (smaps says so mapping by mapping). A mapping
// that can be written, or once could (relocations of a
// position-independent executable), is left out: dropping its pages
// would lose what was written.
func readOnlySpans(smaps, exe string) ([]span, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		return nil, fmt.Errorf("drop start pages: %s: %w", exe, err)
	}
	b, err := os.ReadFile(smaps)
	if err != nil {
		return nil, fmt.Errorf("drop start pages: %w", err)
	}
	var spans []span
	// last is whether the last of spans is the mapping being read.
	last := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			// A mapping's header: range perms offset dev inode [path].
			last = false
			ino, err := strconv.ParseUint(f[4], 10, 64)
			if err != nil || ino != st.Ino || f[1][1] == 'w' || f[1][3] != 'p' || devOf(f[3]) != uint64(st.Dev) {
				continue
			}
			lo, hi, ok := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok || err1 != nil || err2 != nil {
				continue
			}
			spans = append(spans, span{uintptr(start), uintptr(end)})
			last = true
		case last && len(f) >= 2 && f[0] == "Anonymous:" && f[1] != "0":
			spans = spans[:len(spans)-1]
			last = false
		}
	}
	return spans, nil
}

// dropPages unmaps the resident pages of spans with madvise(MADV_DONTNEED):
// for a private file mapping that holds no anonymous page it only drops
// this process's page table entries.
func dropPages(spans []span) error {
	for _, s := range spans {
		for _, advice := range []uintptr{unix.MADV_NOHUGEPAGE, unix.MADV_DONTNEED} {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.start, s.end-s.start, advice); errno != 0 {
				return fmt.Errorf("drop start pages: madvise %#x-%#x: %w", s.start, s.end, errno)
			}
		}
	}
	return nil
}

// The userfaultfd ABI (linux/userfaultfd.h), which golang.org/x/sys/unix
// does not carry.
const (
	uffdAPI            = 0xaa
	uffdUserModeOnly   = 1          // userfaultfd(2) flag: no privilege needed
	uffdFeatureWPAsync = 1 << 15    // write faults resolved by the kernel (Linux 6.7)
	uffdioAPI          = 0xc018aa3f // _IOWR(0xaa, 0x3f, struct uffdio_api)
	uffdioRegister     = 0xc020aa00 // _IOWR(0xaa, 0x00, struct uffdio_register)
	uffdRegisterModeWP = 1 << 1
)

// uffd is the userfaultfd that spans are registered with: closing it
// would end the registration, so it stays open for the process's life.
var uffd uintptr

// noFaultAround stops fault-around on spans, so that a read fault there
// maps the one page touched. The kernel does not fault around in a
// mapping registered with a userfaultfd for write protection
// (mm/memory.c, should_fault_around; madvise(MADV_RANDOM) does not stop
// it), and with the asynchronous write-protect mode (Linux 6.7) any
// mapping may be registered and no thread has to serve the descriptor:
// nothing is write-protected here, and the mappings cannot be written
// anyway. Without that mode, or where userfaultfd(2) is not allowed (a
// seccomp profile), it returns the error and fault-around stays on.
func noFaultAround(spans []span) error {
	if len(spans) == 0 {
		return nil
	}
	fd, _, errno := syscall.Syscall(unix.SYS_USERFAULTFD, syscall.O_CLOEXEC|syscall.O_NONBLOCK|uffdUserModeOnly, 0, 0)
	if errno != 0 {
		return fmt.Errorf("fault-around stays on: userfaultfd: %w", errno)
	}
	// struct uffdio_api: api, features, ioctls.
	api := [3]uint64{uffdAPI, uffdFeatureWPAsync, 0}
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, uffdioAPI, uintptr(unsafe.Pointer(&api))); errno != 0 {
		syscall.Close(int(fd))
		return fmt.Errorf("fault-around stays on: userfaultfd without asynchronous write protection (Linux 6.7): %w", errno)
	}
	for _, s := range spans {
		// struct uffdio_register: range (start, len), mode, ioctls.
		reg := [4]uint64{uint64(s.start), uint64(s.end - s.start), uffdRegisterModeWP, 0}
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, uffdioRegister, uintptr(unsafe.Pointer(&reg))); errno != 0 {
			syscall.Close(int(fd))
			return fmt.Errorf("fault-around stays on: register %#x-%#x with userfaultfd: %w", s.start, s.end, errno)
		}
	}
	uffd = fd
	return nil
}

// devOf turns smaps' "major:minor" (hex) into the kernel's encoding of
// a device number, as stat reports it.
func devOf(s string) uint64 {
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return ^uint64(0)
	}
	a, err1 := strconv.ParseUint(maj, 16, 32)
	b, err2 := strconv.ParseUint(min, 16, 32)
	if err1 != nil || err2 != nil {
		return ^uint64(0)
	}
	// The kernel's new_encode_dev, which stat's st_dev is.
	return (b & 0xff) | (a << 8) | ((b &^ 0xff) << 12)
}
