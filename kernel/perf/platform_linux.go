//go:build linux

package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"

	perfutils "github.com/hodgesds/perf-utils"
	"github.com/klauspost/cpuid/v2"
	"golang.org/x/sys/unix"
)

// rusageAvailable: getrusage(RUSAGE_THREAD) exists on Linux.
const rusageAvailable = true

func unavailableHere() Reason {
	return Reason{Code: ReasonUnknown, Message: "unavailable"}
}

// Probe finds out once what can be counted on this system and why the
// rest cannot. It opens every planned event alone on the calling thread
// (user space only) and closes it again.
func Probe() Availability {
	env := Env{Paranoid: ParanoidUnknown}
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil {
		env.Paranoid = parseParanoid(string(b))
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		env.CapPerfmon = parseCapPerfmon(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		env.Hypervisor = cpuinfoHasFlag(string(b), "hypervisor")
	}
	var pmus []string
	if m, err := perfutils.AvailablePMUs(); err == nil {
		for name := range m {
			pmus = append(pmus, name)
		}
	} else if ents, err := os.ReadDir(perfutils.PMUEventBaseDir); err == nil {
		for _, e := range ents {
			pmus = append(pmus, e.Name())
		}
	}
	sort.Strings(pmus)
	cpu := CPU{Vendor: cpuid.CPU.VendorString, Family: cpuid.CPU.Family, Model: cpuid.CPU.Model, Brand: strings.TrimSpace(cpuid.CPU.BrandName)}
	if cpu.Vendor == "" {
		cpu.Vendor = runtime.GOARCH
	}
	return probeWith("linux", cpu, env, pmus, func(ev Event) error {
		fd, err := openEvent(ev, -1)
		if err != nil {
			return err
		}
		unix.Close(fd)
		return nil
	})
}

// parseParanoid parses /proc/sys/kernel/perf_event_paranoid.
func parseParanoid(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return ParanoidUnknown
	}
	return n
}

// parseCapPerfmon reports whether CapEff in /proc/self/status has
// CAP_PERFMON (38) or CAP_SYS_ADMIN (21).
func parseCapPerfmon(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(rest), 16, 64)
		if err != nil {
			return false
		}
		return v&(1<<38) != 0 || v&(1<<21) != 0
	}
	return false
}

// cpuinfoHasFlag reports whether the first "flags" line of /proc/cpuinfo
// lists flag.
func cpuinfoHasFlag(cpuinfo, flag string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != "flags" {
			continue
		}
		for _, f := range strings.Fields(val) {
			if f == flag {
				return true
			}
		}
		return false
	}
	return false
}

const readFormat = unix.PERF_FORMAT_GROUP | unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING

// openEvent opens ev on the calling thread (pid 0, any CPU), user space
// only, as a member of groupFd (-1: a new group leader).
func openEvent(ev Event, groupFd int) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        ev.Type,
		Config:      ev.Config,
		Size:        perfutils.EventAttrSize,
		Bits:        unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
		Read_format: readFormat,
	}
	if ev.KernelToo {
		attr.Bits = unix.PerfBitExcludeHv
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, groupFd, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("perf_event_open %s: %w", ev.Name, err)
	}
	return fd, nil
}

type linuxGroup struct {
	fds []int
	buf []byte
}

type linuxThread struct {
	groups []*linuxGroup // nil entries: the group failed to open
}

// openThread opens every group on the calling thread. Groups that fail are
// skipped; their events are returned with the reason.
func openThread(groups []GroupSpec) (threadCounters, map[string]Reason) {
	t := &linuxThread{groups: make([]*linuxGroup, len(groups))}
	var failed map[string]Reason
	for i, g := range groups {
		lg, err := openGroup(g)
		if err != nil {
			if failed == nil {
				failed = map[string]Reason{}
			}
			r := Explain(err, g.Events[0].Kind, Env{Paranoid: ParanoidUnknown, HasPMU: true, ExcludeKern: true})
			r.Code = ReasonGroupFailed
			r.Message = "group " + g.Name + " could not be opened on this thread: " + r.Message
			for _, ev := range g.Events {
				failed[ev.Name] = r
			}
			continue
		}
		t.groups[i] = lg
	}
	return t, failed
}

func openGroup(g GroupSpec) (*linuxGroup, error) {
	lg := &linuxGroup{buf: make([]byte, 8*(3+len(g.Events)))}
	leader := -1
	for _, ev := range g.Events {
		fd, err := openEvent(ev, leader)
		if err != nil {
			lg.close()
			return nil, err
		}
		if leader < 0 {
			leader = fd
		}
		lg.fds = append(lg.fds, fd)
	}
	return lg, nil
}

func (g *linuxGroup) read(dst *GroupReading) error {
	if len(g.fds) == 0 {
		return errors.New("perf: group not open")
	}
	var n int
	var err error
	for {
		n, err = unix.Read(g.fds[0], g.buf)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("perf: read group: %w", err)
	}
	return parseGroupRead(g.buf[:n], len(g.fds), dst)
}

// parseGroupRead decodes a PERF_FORMAT_GROUP|TE|TR read: nr, enabled,
// running, then nr values.
func parseGroupRead(b []byte, want int, dst *GroupReading) error {
	if len(b) < 24 {
		return fmt.Errorf("perf: short group read (%d bytes)", len(b))
	}
	ne := binary.NativeEndian
	nr := int(ne.Uint64(b))
	if nr != want || len(b) < 8*(3+nr) {
		return fmt.Errorf("perf: group read has %d values in %d bytes, want %d", nr, len(b), want)
	}
	dst.Enabled = ne.Uint64(b[8:])
	dst.Running = ne.Uint64(b[16:])
	if cap(dst.Values) < nr {
		dst.Values = make([]uint64, nr)
	}
	dst.Values = dst.Values[:nr]
	for i := range nr {
		dst.Values[i] = ne.Uint64(b[24+8*i:])
	}
	return nil
}

func (g *linuxGroup) close() {
	for i := len(g.fds) - 1; i >= 0; i-- {
		unix.Close(g.fds[i])
	}
	g.fds = nil
}

func (t *linuxThread) read(dst []GroupReading) error {
	var errs []error
	for i, g := range t.groups {
		if g == nil {
			dst[i] = GroupReading{}
			continue
		}
		if err := g.read(&dst[i]); err != nil {
			dst[i] = GroupReading{}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *linuxThread) close() {
	for _, g := range t.groups {
		if g != nil {
			g.close()
		}
	}
}

// threadContextSwitches returns the calling thread's voluntary plus
// involuntary context switches.
func threadContextSwitches() (uint64, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return uint64(ru.Nvcsw + ru.Nivcsw), true
}

// CycleCounter counts the calling thread's user-space CPU cycles. Open it
// on the goroutine that will read it, locked to its OS thread.
type CycleCounter struct {
	g *linuxGroup
	r GroupReading
}

// OpenCycleCounter opens a cycles counter on the calling thread. On
// machines without a PMU it fails with an error wrapping the errno; Explain
// turns it into a reason.
func OpenCycleCounter() (*CycleCounter, error) {
	g, err := openGroup(GroupSpec{Name: "cycles", Events: []Event{{Name: EvCycles, Kind: KindHardware, Type: typeHardware, Config: hwCPUCycles}}})
	if err != nil {
		return nil, err
	}
	return &CycleCounter{g: g}, nil
}

// Cycles returns the cycles counted since the counter was opened, scaled
// for multiplexing.
func (c *CycleCounter) Cycles() (uint64, error) {
	if err := c.g.read(&c.r); err != nil {
		return 0, err
	}
	v, _, ok := Scale(c.r.Values[0], c.r.Enabled, c.r.Running)
	if !ok {
		return 0, errors.New("perf: cycles counter never ran")
	}
	return uint64(v), nil
}

// Close releases the counter.
func (c *CycleCounter) Close() error {
	c.g.close()
	return nil
}
