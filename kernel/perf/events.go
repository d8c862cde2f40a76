// Package perf measures what a query does to the CPU with Linux hardware and
// software performance counters (perf_event_open), one counter group per
// engine worker thread, and explains honestly why a counter is unavailable
// (no PMU in a virtual machine, perf_event_paranoid, a container's seccomp
// filter, another operating system, or the browser).
//
// Use a QueryMeter per query: chain its Hooks into engine.Session.Exec, then
// read its Report. Probe tells once at startup what can be counted here.
//
// Events come in three kinds: generic hardware and cache events that the
// kernel maps for every CPU, software events that always work when the
// syscall is allowed, and raw per-vendor recipes (AMD Zen 3/4/5, Intel
// Skylake and Ice Lake or newer) selected from the CPU's vendor, family and
// model. Derived metrics (IPC, GHz, MPKI, stall and retiring percentages,
// DRAM bytes) are computed only when all their inputs were counted.
package perf

// Perf event types, as in linux/perf_event.h. They are spelled out here
// rather than taken from golang.org/x/sys/unix so that recipes and reports
// build on every platform, including js/wasm.
const (
	typeHardware = 0
	typeSoftware = 1
	typeHWCache  = 3
	typeRaw      = 4
)

// Generic hardware event configs (PERF_COUNT_HW_*).
const (
	hwCPUCycles       = 0
	hwInstructions    = 1
	hwCacheReferences = 2
	hwCacheMisses     = 3
	hwBranchInstrs    = 4
	hwBranchMisses    = 5
)

// Software event configs (PERF_COUNT_SW_*).
const (
	swCPUClock        = 0
	swTaskClock       = 1
	swPageFaults      = 2
	swContextSwitches = 3
	swCPUMigrations   = 4
	swPageFaultsMin   = 5
	swPageFaultsMaj   = 6
)

// Cache event ids, ops and results (PERF_COUNT_HW_CACHE_*).
const (
	cacheL1D     = 0
	cacheLL      = 2
	cacheDTLB    = 3
	cacheOpRead  = 0
	cacheResMiss = 1
)

func cacheConfig(id, op, res uint64) uint64 { return id | op<<8 | res<<16 }

// Kind says where an event's value comes from.
type Kind string

// Event kinds.
const (
	KindHardware Kind = "hardware" // generic PERF_TYPE_HARDWARE / HW_CACHE
	KindSoftware Kind = "software" // PERF_TYPE_SOFTWARE
	KindRaw      Kind = "raw"      // PERF_TYPE_RAW, a vendor recipe
	KindRusage   Kind = "rusage"   // getrusage(RUSAGE_THREAD)
)

// Event names used in reports and by derived metrics. Raw recipe events use
// the same names on every vendor where they mean the same thing.
const (
	EvCycles          = "cycles"
	EvInstructions    = "instructions"
	EvBranches        = "branches"
	EvBranchMisses    = "branch-misses"
	EvL1DReadMisses   = "L1-dcache-load-misses"
	EvDTLBReadMisses  = "dTLB-load-misses"
	EvLLCMisses       = "LLC-load-misses"
	EvTaskClock       = "task-clock"
	EvPageFaults      = "page-faults"
	EvMinorFaults     = "minor-faults"
	EvMajorFaults     = "major-faults"
	EvContextSwitches = "context-switches"
	EvCPUMigrations   = "cpu-migrations"

	// AMD Zen 4/5 pipeline-utilisation inputs.
	EvNotHaltedCycles   = "ls_not_halted_cyc"
	EvBackendStallSlots = "de_no_dispatch_per_slot.backend_stalls"
	EvRetireNotComplete = "ex_no_retire.not_complete"
	EvRetireLoadNotComp = "ex_no_retire.load_not_complete"
	EvRetiredOps        = "ex_ret_ops"

	// Intel Ice Lake+ top-down pseudo events.
	EvSlots            = "slots"
	EvTopdownRetiring  = "topdown-retiring"
	EvTopdownBadSpec   = "topdown-bad-spec"
	EvTopdownFEBound   = "topdown-fe-bound"
	EvTopdownBEBound   = "topdown-be-bound"
	EvTopdownMemBound  = "topdown-mem-bound"
	EvUopsRetireSlots  = "uops_retired.retire_slots"
	EvStallsMemAny     = "cycle_activity.stalls_mem_any"
	EvCoreCycles       = "cpu_clk_unhalted.thread"
	EvStallsTotal      = "cycle_activity.stalls_total"
	EvLoadsL2Hit       = "mem_load_retired.l2_hit"
	EvLoadsL3Hit       = "mem_load_retired.l3_hit"
	EvLoadsL3Miss      = "mem_load_retired.l3_miss"
	EvFillsFromL2      = "fills-from-l2"
	EvFillsFromL3      = "fills-from-l3"
	EvFillsFromDRAM    = "fills-from-dram"
	EvFillsFromRemoteC = "fills-from-other-cache"
)

// Event is one countable event.
type Event struct {
	Name   string `json:"name"`
	Desc   string `json:"desc"`
	Kind   Kind   `json:"kind"`
	Type   uint32 `json:"type"`
	Config uint64 `json:"config"`
	// Unit is "ns" for clocks, empty for counts.
	Unit string `json:"unit,omitempty"`
	// KernelToo opens the event without exclude_kernel (software events,
	// only where the probe found kernel counting allowed).
	KernelToo bool `json:"kernel_too,omitempty"`
}

// GroupSpec is a set of events read together atomically. Ratios inside a
// group need no multiplexing correction.
type GroupSpec struct {
	Name   string  `json:"name"`
	Events []Event `json:"events"`
}

// SoftwareGroup is the software group every meter opens.
func SoftwareGroup() GroupSpec {
	return GroupSpec{Name: "software", Events: []Event{
		{Name: EvTaskClock, Desc: "CPU time of the thread", Kind: KindSoftware, Type: typeSoftware, Config: swTaskClock, Unit: "ns"},
		{Name: EvPageFaults, Desc: "page faults", Kind: KindSoftware, Type: typeSoftware, Config: swPageFaults},
		{Name: EvMinorFaults, Desc: "minor page faults (no I/O)", Kind: KindSoftware, Type: typeSoftware, Config: swPageFaultsMin},
		{Name: EvMajorFaults, Desc: "major page faults (I/O)", Kind: KindSoftware, Type: typeSoftware, Config: swPageFaultsMaj},
		{Name: EvCPUMigrations, Desc: "moves to another CPU", Kind: KindSoftware, Type: typeSoftware, Config: swCPUMigrations},
	}}
}

// GenericGroups are the generic hardware groups, valid on any CPU with a
// PMU (the kernel maps them; their exact meaning differs by vendor).
func GenericGroups() []GroupSpec {
	return []GroupSpec{
		{Name: "core", Events: []Event{
			{Name: EvCycles, Desc: "core cycles (user space)", Kind: KindHardware, Type: typeHardware, Config: hwCPUCycles},
			{Name: EvInstructions, Desc: "instructions retired", Kind: KindHardware, Type: typeHardware, Config: hwInstructions},
			{Name: EvBranches, Desc: "branch instructions", Kind: KindHardware, Type: typeHardware, Config: hwBranchInstrs},
			{Name: EvBranchMisses, Desc: "mispredicted branches", Kind: KindHardware, Type: typeHardware, Config: hwBranchMisses},
		}},
		{Name: "cache", Events: []Event{
			{Name: EvL1DReadMisses, Desc: "L1 data cache read misses", Kind: KindHardware, Type: typeHWCache, Config: cacheConfig(cacheL1D, cacheOpRead, cacheResMiss)},
			{Name: EvDTLBReadMisses, Desc: "data TLB read misses", Kind: KindHardware, Type: typeHWCache, Config: cacheConfig(cacheDTLB, cacheOpRead, cacheResMiss)},
			{Name: EvLLCMisses, Desc: "last-level cache read misses", Kind: KindHardware, Type: typeHWCache, Config: cacheConfig(cacheLL, cacheOpRead, cacheResMiss)},
		}},
	}
}
