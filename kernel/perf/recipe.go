package perf

import "fmt"

// CPU identifies a processor for recipe selection.
type CPU struct {
	Vendor string `json:"vendor"` // "AuthenticAMD", "GenuineIntel", ...
	Family int    `json:"family"`
	Model  int    `json:"model"`
	Brand  string `json:"brand,omitempty"`
}

// String formats the CPU as perf's PERF_CPUID does: vendor-family-model.
func (c CPU) String() string { return fmt.Sprintf("%s-%d-%X", c.Vendor, c.Family, c.Model) }

// Recipe is a vendor-specific set of raw event groups and what they can
// derive. Raw encodings come from the Linux perf JSON event tables; none of
// them could be run on a real PMU while this was written, so a recipe whose
// events the kernel rejects simply reports them unavailable.
type Recipe struct {
	Name string `json:"name"`
	// Note explains the recipe's limits (shown in reports).
	Note   string      `json:"note,omitempty"`
	Groups []GroupSpec `json:"groups,omitempty"`
}

// amdRaw encodes an AMD core PMU event: event bits 0-7 and 32-35, umask
// bits 8-15 (arch/x86/events/amd/core.c format).
func amdRaw(code, umask uint64) uint64 {
	return code&0xff | (code>>8&0xf)<<32 | umask<<8
}

// intelRaw encodes an Intel core PMU event: event 0-7, umask 8-15,
// cmask 24-31.
func intelRaw(event, umask, cmask uint64) uint64 {
	return event&0xff | umask<<8 | cmask<<24
}

func raw(name, desc string, config uint64) Event {
	return Event{Name: name, Desc: desc, Kind: KindRaw, Type: typeRaw, Config: config}
}

func amdFillsGroup() GroupSpec {
	// ls_dmnd_fills_from_sys (event 0x43): where each L1D demand miss was
	// filled from. Zen 3 names the umasks differently but uses the same bits.
	return GroupSpec{Name: "fills", Events: []Event{
		raw(EvFillsFromL2, "L1D demand fills from the local L2", amdRaw(0x43, 0x01)),
		raw(EvFillsFromL3, "L1D demand fills from the local L3 (same CCX)", amdRaw(0x43, 0x02)),
		raw(EvFillsFromRemoteC, "L1D demand fills from another CCX's cache", amdRaw(0x43, 0x04|0x10)),
		raw(EvFillsFromDRAM, "L1D demand fills from DRAM or I/O (near and far)", amdRaw(0x43, 0x08|0x40)),
	}}
}

func amdPipelineGroup() GroupSpec {
	return GroupSpec{Name: "pipeline", Events: []Event{
		raw(EvNotHaltedCycles, "cycles not halted", amdRaw(0x76, 0)),
		raw(EvBackendStallSlots, "dispatch slots lost to back-end stalls", amdRaw(0x1a0, 0x1e)),
		raw(EvRetireNotComplete, "cycles retirement waited on an incomplete op", amdRaw(0xd6, 0x02)),
		raw(EvRetireLoadNotComp, "... of which the oldest op was a load", amdRaw(0xd6, 0xa2)),
		raw(EvRetiredOps, "macro-ops retired", amdRaw(0xc1, 0)),
	}}
}

// Intel model numbers (family 6) grouped by PMU generation.
var (
	intelSkylakeModels = map[int]bool{0x4E: true, 0x5E: true, 0x55: true, 0x8E: true, 0x9E: true, 0xA5: true, 0xA6: true}
	intelIceLakeModels = map[int]bool{0x7D: true, 0x7E: true, 0x6A: true, 0x6C: true, 0x8C: true, 0x8D: true, 0xA7: true}
	// Sapphire Rapids and newer servers: top-down level 2 (memory bound).
	intelSPRModels = map[int]bool{0x8F: true, 0xCF: true, 0xAD: true, 0xAE: true}
	// Hybrid client parts (P and E cores).
	intelHybridModels = map[int]bool{0x97: true, 0x9A: true, 0xB7: true, 0xBA: true, 0xBF: true, 0xAA: true, 0xAC: true, 0xC5: true, 0xC6: true, 0xBD: true}
)

func intelLoadsGroup() GroupSpec {
	return GroupSpec{Name: "loads", Events: []Event{
		raw(EvLoadsL2Hit, "retired loads that hit L2", intelRaw(0xd1, 0x02, 0)),
		raw(EvLoadsL3Hit, "retired loads that hit L3", intelRaw(0xd1, 0x04, 0)),
		raw(EvLoadsL3Miss, "retired loads that missed L3 (went to DRAM)", intelRaw(0xd1, 0x20, 0)),
	}}
}

func intelTopdownGroup(memBound bool) GroupSpec {
	g := GroupSpec{Name: "topdown", Events: []Event{
		raw(EvSlots, "issue slots", 0x0400),
		raw(EvTopdownRetiring, "slots that retired useful work", 0x8000),
		raw(EvTopdownBadSpec, "slots wasted on bad speculation", 0x8100),
		raw(EvTopdownFEBound, "slots the front end left empty", 0x8200),
		raw(EvTopdownBEBound, "slots stalled by the back end", 0x8300),
	}}
	if memBound {
		g.Events = append(g.Events, raw(EvTopdownMemBound, "slots stalled on memory", 0x8700))
	}
	return g
}

// ChooseRecipe picks the raw-event recipe for a CPU, following the Linux
// perf mapfile: AMD family 25 models 0x00-0x0F and 0x20-0x5F are Zen 3,
// other family 25 models Zen 4, family 26 Zen 5; Intel family 6 by model.
// Unknown CPUs get the "generic" recipe (no raw events).
func ChooseRecipe(c CPU) Recipe {
	switch c.Vendor {
	case "AuthenticAMD", "HygonGenuine":
		switch {
		case c.Family == 25 && (c.Model <= 0x0F || (c.Model >= 0x20 && c.Model <= 0x5F)):
			return Recipe{Name: "amd-zen3", Note: "Zen 3 has no per-slot dispatch events: fills only, no pipeline split",
				Groups: []GroupSpec{amdFillsGroup()}}
		case c.Family == 25:
			return Recipe{Name: "amd-zen4", Note: "6 dispatch slots per cycle",
				Groups: []GroupSpec{amdPipelineGroup(), amdFillsGroup()}}
		case c.Family == 26:
			return Recipe{Name: "amd-zen5", Note: "8 dispatch slots per cycle",
				Groups: []GroupSpec{amdPipelineGroup(), amdFillsGroup()}}
		}
	case "GenuineIntel":
		if c.Family != 6 {
			break
		}
		switch {
		case intelSkylakeModels[c.Model]:
			return Recipe{Name: "intel-skylake", Note: "memory stall % = CYCLE_ACTIVITY.STALLS_MEM_ANY / cycles (approximation of tma_memory_bound)",
				Groups: []GroupSpec{{Name: "pipeline", Events: []Event{
					raw(EvCoreCycles, "core cycles", intelRaw(0x3c, 0x00, 0)),
					raw(EvUopsRetireSlots, "retirement slots used", intelRaw(0xc2, 0x02, 0)),
					raw(EvStallsMemAny, "cycles stalled with a memory load pending", intelRaw(0xa3, 0x14, 0x14)),
					raw(EvStallsTotal, "cycles with no uop executed", intelRaw(0xa3, 0x04, 0x04)),
				}}, intelLoadsGroup()}}
		case intelSPRModels[c.Model]:
			return Recipe{Name: "intel-spr", Note: "top-down level 1 and memory bound from PERF_METRICS",
				Groups: []GroupSpec{intelTopdownGroup(true), intelLoadsGroup()}}
		case intelIceLakeModels[c.Model]:
			return Recipe{Name: "intel-icelake", Note: "top-down level 1 from PERF_METRICS",
				Groups: []GroupSpec{intelTopdownGroup(false), intelLoadsGroup()}}
		case intelHybridModels[c.Model]:
			return Recipe{Name: "intel-hybrid", Note: "hybrid P/E-core CPU: raw events are bound to one core type; generic events only",
				Groups: nil}
		}
	}
	return Recipe{Name: "generic", Note: "no raw recipe for this CPU: generic events only"}
}

// dispatchWidth is the number of dispatch slots per cycle of an AMD recipe.
func dispatchWidth(recipe string) float64 {
	switch recipe {
	case "amd-zen4":
		return 6
	case "amd-zen5":
		return 8
	}
	return 0
}
