//go:build linux

package perf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	perfutils "github.com/hodgesds/perf-utils"
	"golang.org/x/sys/unix"
)

func TestConstantsMatchKernelHeaders(t *testing.T) {
	pairs := []struct {
		name      string
		ours, sys uint64
	}{
		{"type hardware", typeHardware, unix.PERF_TYPE_HARDWARE},
		{"type software", typeSoftware, unix.PERF_TYPE_SOFTWARE},
		{"type hw cache", typeHWCache, unix.PERF_TYPE_HW_CACHE},
		{"type raw", typeRaw, unix.PERF_TYPE_RAW},
		{"cycles", hwCPUCycles, unix.PERF_COUNT_HW_CPU_CYCLES},
		{"instructions", hwInstructions, unix.PERF_COUNT_HW_INSTRUCTIONS},
		{"branches", hwBranchInstrs, unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
		{"branch misses", hwBranchMisses, unix.PERF_COUNT_HW_BRANCH_MISSES},
		{"task clock", swTaskClock, unix.PERF_COUNT_SW_TASK_CLOCK},
		{"page faults", swPageFaults, unix.PERF_COUNT_SW_PAGE_FAULTS},
		{"minor faults", swPageFaultsMin, unix.PERF_COUNT_SW_PAGE_FAULTS_MIN},
		{"major faults", swPageFaultsMaj, unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ},
		{"migrations", swCPUMigrations, unix.PERF_COUNT_SW_CPU_MIGRATIONS},
		{"L1D read miss", cacheConfig(cacheL1D, cacheOpRead, cacheResMiss), perfutils.L1DataReadMiss},
		{"LL read miss", cacheConfig(cacheLL, cacheOpRead, cacheResMiss), perfutils.LLReadMiss},
		{"dTLB read miss", cacheConfig(cacheDTLB, cacheOpRead, cacheResMiss), perfutils.DataTLBReadMiss},
	}
	for _, p := range pairs {
		if p.ours != p.sys {
			t.Errorf("%s: ours %d, kernel %d", p.name, p.ours, p.sys)
		}
	}
}

func TestParsers(t *testing.T) {
	if got := parseParanoid("2\n"); got != 2 {
		t.Errorf("paranoid = %d", got)
	}
	if got := parseParanoid("-1"); got != -1 {
		t.Errorf("paranoid = %d", got)
	}
	if got := parseParanoid("x"); got != ParanoidUnknown {
		t.Errorf("paranoid = %d", got)
	}
	if !parseCapPerfmon("Name:\tx\nCapEff:\t000001ffffffffff\n") {
		t.Error("root caps not seen")
	}
	if !parseCapPerfmon("CapEff:\t0000004000000000\n") {
		t.Error("CAP_PERFMON not seen")
	}
	if parseCapPerfmon("CapEff:\t0000000000000000\n") || parseCapPerfmon("") {
		t.Error("no caps seen as caps")
	}
	info := "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n"
	if !cpuinfoHasFlag(info, "hypervisor") || cpuinfoHasFlag(info, "perfctr_core") {
		t.Error("cpuinfo flags")
	}
}

func TestParseGroupRead(t *testing.T) {
	b := make([]byte, 8*5)
	ne := binary.NativeEndian
	for i, v := range []uint64{2, 1000, 500, 7, 9} {
		ne.PutUint64(b[8*i:], v)
	}
	var r GroupReading
	if err := parseGroupRead(b, 2, &r); err != nil {
		t.Fatal(err)
	}
	if r.Enabled != 1000 || r.Running != 500 || len(r.Values) != 2 || r.Values[1] != 9 {
		t.Errorf("got %+v", r)
	}
	if err := parseGroupRead(b, 3, &r); err == nil {
		t.Error("wrong count accepted")
	}
	if err := parseGroupRead(b[:16], 2, &r); err == nil {
		t.Error("short read accepted")
	}
}

// work touches memory so page faults and task-clock move.
func work(n int) uint64 {
	b := make([]uint64, n)
	var s uint64
	for r := 0; r < 3; r++ {
		for i := range b {
			b[i] += uint64(i) ^ s
			s += b[i]
		}
	}
	return s
}

// TestMeterWorkers simulates the engine: several locked worker goroutines
// call the hooks and do memory work while another goroutine takes
// snapshots.
func TestMeterWorkers(t *testing.T) {
	m := NewQueryMeter(Options{})
	a := m.Availability()
	if !a.Software.Available {
		t.Skipf("software counters unavailable here: %s", a.Summary())
	}
	var nextCalls sync.Map
	h := m.Hooks(Hooksish{calls: &nextCalls}.hooks())
	if !h.LockThreads {
		t.Fatal("LockThreads not set")
	}
	const workers = 4
	stop := make(chan struct{})
	var snaps sync.WaitGroup
	snaps.Add(1)
	go func() {
		defer snaps.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				s := m.Snapshot()
				if !s.Live {
					t.Error("snapshot not live")
				}
			}
		}
	}()
	var wg sync.WaitGroup
	var sink [workers]uint64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			h.WorkerStart(w)
			h.PhaseStart(w, "scan")
			sink[w] += work(1 << 18)
			h.PhaseEnd(w, "scan")
			h.PhaseStart(w, "aggregate")
			sink[w] += work(1 << 19)
			h.PhaseEnd(w, "aggregate")
			h.WorkerStop(w)
		}()
	}
	wg.Wait()
	close(stop)
	snaps.Wait()

	rep := m.Report()
	if len(rep.Workers) != workers {
		t.Fatalf("%d worker rows", len(rep.Workers))
	}
	for _, w := range rep.Workers {
		tc, ok := w.Event(EvTaskClock)
		if !ok || tc.Value <= 0 {
			t.Errorf("worker %d task-clock = %+v", w.Worker, tc)
		}
		if pf, ok := w.Event(EvPageFaults); !ok || pf.Value <= 0 {
			t.Errorf("worker %d page-faults = %+v", w.Worker, pf)
		}
		if _, ok := w.Event(EvContextSwitches); !ok {
			t.Errorf("worker %d has no context switches reading", w.Worker)
		}
	}
	tc, _ := rep.Total.Event(EvTaskClock)
	var sum float64
	for _, w := range rep.Workers {
		x, _ := w.Event(EvTaskClock)
		sum += x.Value
	}
	if tc.Value != sum {
		t.Errorf("total task-clock %v != sum of workers %v", tc.Value, sum)
	}
	if len(rep.Phases) != 2 || rep.Phases[0].Phase != "scan" || rep.Phases[1].Phase != "aggregate" {
		t.Fatalf("phases = %+v", rep.Phases)
	}
	for _, p := range rep.Phases {
		if x, ok := p.Total.Event(EvTaskClock); !ok || x.Value <= 0 || len(p.Workers) != workers {
			t.Errorf("phase %s task-clock %+v, %d workers", p.Phase, x, len(p.Workers))
		}
	}
	if _, ok := rep.Total.Metric("cpus-utilized"); !ok {
		t.Error("cpus-utilized missing")
	}
	for _, k := range []string{"start", "stop", "pstart", "pend"} {
		if _, ok := nextCalls.Load(k); !ok {
			t.Errorf("chained hook %s not called", k)
		}
	}

	// Hardware events: either counted, or unavailable with a reason (this VM).
	cy, _ := rep.Total.Event(EvCycles)
	if a.Hardware.Available {
		if !cy.Available || cy.Value <= 0 {
			t.Errorf("hardware available but cycles = %+v", cy)
		}
	} else {
		if cy.Available || cy.Reason == nil || cy.Reason.Message == "" {
			t.Errorf("cycles should be unavailable with a reason: %+v", cy)
		}
		if _, ok := rep.Total.Metric("ipc"); ok {
			t.Error("ipc computed without cycles")
		}
		t.Logf("hardware unavailable: %s (%s)", a.Hardware.Reason.Message, a.Hardware.Reason.Errno)
	}

	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "task-clock") {
		t.Errorf("table:\n%s", buf.String())
	}
	t.Logf("\n%s", buf.String())
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Workers) != workers {
		t.Errorf("json round trip lost workers")
	}
}

func TestProbeHere(t *testing.T) {
	a := Probe()
	if a.OS != "linux" || len(a.Events) == 0 {
		t.Fatalf("probe = %+v", a)
	}
	for _, e := range a.Events {
		if !e.Available && (e.Reason == nil || e.Reason.Message == "") {
			t.Errorf("%s unavailable without reason", e.Name)
		}
	}
	t.Logf("%s", a.Summary())
}

func TestCycleCounter(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := OpenCycleCounter()
	if err != nil {
		r := Explain(err, KindHardware, Env{Paranoid: 2, Hypervisor: true, ExcludeKern: true})
		if r.Message == "" {
			t.Fatal("no reason")
		}
		t.Skipf("no cycle counter here: %v (%s)", err, r.Message)
	}
	defer c.Close()
	a, _ := c.Cycles()
	work(1 << 16)
	b, err := c.Cycles()
	if err != nil || b <= a {
		t.Errorf("cycles %d → %d, %v", a, b, err)
	}
}

// TestSnapshotReadsRunningWorker checks that a snapshot from another
// goroutine sees the counts of a worker that has not stopped yet.
func TestSnapshotReadsRunningWorker(t *testing.T) {
	m := NewQueryMeter(Options{NoHardware: true, NoRaw: true})
	if !m.Availability().Software.Available {
		t.Skip("no software counters")
	}
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		m.WorkerStart(1)
		close(started)
		var s uint64
		for {
			select {
			case <-release:
				sink[0] = s
				m.WorkerStop(1)
				return
			default:
				s += work(1 << 12)
			}
		}
	}()
	<-started
	deadline := time.Now().Add(5 * time.Second)
	var tc Reading
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		snap := m.Snapshot()
		if !snap.Live || len(snap.Workers) != 1 {
			t.Fatalf("snapshot %+v", snap)
		}
		tc, _ = snap.Total.Event(EvTaskClock)
		if tc.Value > 5e6 { // 5 ms of CPU seen while running
			break
		}
	}
	close(release)
	<-done
	if tc.Value <= 5e6 {
		t.Errorf("snapshot task-clock stayed at %v", tc.Value)
	}
	if final, _ := m.Report().Total.Event(EvTaskClock); final.Value < tc.Value {
		t.Errorf("final %v < snapshot %v", final.Value, tc.Value)
	}
}

var sink [1]uint64
