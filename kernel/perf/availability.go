package perf

import (
	"fmt"
	"strings"
)

// Status says whether a class of events (software, generic hardware, raw
// recipe) can be counted, and why not.
type Status struct {
	Available bool    `json:"available"`
	Reason    *Reason `json:"reason,omitempty"`
}

// EventStatus is the probe result for one event.
type EventStatus struct {
	Name      string  `json:"name"`
	Kind      Kind    `json:"kind"`
	Group     string  `json:"group"`
	Available bool    `json:"available"`
	Reason    *Reason `json:"reason,omitempty"`
}

// Availability is what Probe found out about counting on this system.
type Availability struct {
	OS         string `json:"os"`
	CPU        CPU    `json:"cpu"`
	Recipe     string `json:"recipe"`
	RecipeNote string `json:"recipe_note,omitempty"`
	// Paranoid is kernel.perf_event_paranoid, ParanoidUnknown if unread.
	Paranoid   int      `json:"perf_event_paranoid"`
	CapPerfmon bool     `json:"cap_perfmon"`
	Hypervisor bool     `json:"hypervisor"`
	PMUs       []string `json:"pmus"`
	// UserOnly: hardware and raw events count user space only
	// (exclude_kernel), always, so numbers mean the same on every machine.
	UserOnly bool `json:"user_space_only"`
	// SoftwareKernel: software events also count kernel context (allowed
	// at perf_event_paranoid <= 1 or with CAP_PERFMON). Without it,
	// cpu-migrations would always read 0 and is reported unavailable.
	SoftwareKernel bool   `json:"software_kernel"`
	Software       Status `json:"software"`
	Hardware       Status `json:"hardware"`
	Raw            Status `json:"raw"`
	ContextNote    string `json:"context_switches_note,omitempty"`
	// Events lists every event the meter would open, with its status.
	Events []EventStatus `json:"events"`
}

// Summary is a one-line description for people.
func (a Availability) Summary() string {
	var parts []string
	part := func(name string, s Status) {
		if s.Available {
			parts = append(parts, name+" yes")
		} else if s.Reason != nil {
			parts = append(parts, fmt.Sprintf("%s no (%s)", name, s.Reason.Message))
		} else {
			parts = append(parts, name+" no")
		}
	}
	part("software", a.Software)
	if !a.Hardware.Available && !a.Raw.Available && a.Hardware.Reason != nil && a.Raw.Reason != nil &&
		a.Hardware.Reason.Message == a.Raw.Reason.Message {
		part("hardware", a.Hardware)
	} else {
		part("hardware", a.Hardware)
		part("raw "+a.Recipe, a.Raw)
	}
	s := strings.Join(parts, "; ")
	if a.UserOnly {
		s += "; user-space only"
	}
	return s
}

// classStatus folds per-event statuses of one kind into a Status: available
// if any event is, else the first event's reason.
func classStatus(events []EventStatus, kinds ...Kind) Status {
	var first *Reason
	for _, e := range events {
		if !contains(kindsToStrings(kinds), string(e.Kind)) {
			continue
		}
		if e.Available {
			return Status{Available: true}
		}
		if first == nil {
			first = e.Reason
		}
	}
	if first == nil {
		first = &Reason{Code: ReasonUnsupported, Message: "no events of this kind for this CPU"}
	}
	return Status{Reason: first}
}

func kindsToStrings(kinds []Kind) []string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return s
}

// corePMUs are the sysfs PMU names that carry core hardware events.
var corePMUs = []string{"cpu", "cpu_core", "cpu_atom", "armv8_pmuv3", "armv8_pmuv3_0"}

// hasCorePMU reports whether pmus (names under
// /sys/bus/event_source/devices) include a core PMU.
func hasCorePMU(pmus []string) bool {
	for _, p := range pmus {
		if contains(corePMUs, p) || len(p) > 6 && p[:6] == "armv8_" {
			return true
		}
	}
	return false
}

// probeWith builds an Availability from what the system reports and from
// trying to open every planned event alone with open (nil error: opened).
// It is pure given open, so every errno path can be tested with a fake.
func probeWith(osName string, cpu CPU, env Env, pmus []string, open func(Event) error) Availability {
	env.HasPMU = hasCorePMU(pmus)
	env.ExcludeKern = true
	kernelOK := KernelCountingAllowed(env)
	recipe := ChooseRecipe(cpu)
	a := Availability{
		OS:             osName,
		CPU:            cpu,
		Recipe:         recipe.Name,
		RecipeNote:     recipe.Note,
		Paranoid:       env.Paranoid,
		CapPerfmon:     env.CapPerfmon,
		Hypervisor:     env.Hypervisor,
		PMUs:           append([]string{}, pmus...),
		UserOnly:       true,
		SoftwareKernel: kernelOK,
		ContextNote:    "context switches come from getrusage(RUSAGE_THREAD): counted with exclude_kernel the perf event reads 0",
	}
	for _, g := range plannedGroups(cpu, Options{}) {
		for _, ev := range g.Events {
			st := EventStatus{Name: ev.Name, Kind: ev.Kind, Group: g.Name}
			if ev.Kind == KindSoftware && kernelOK {
				ev.KernelToo = true
			}
			if err := open(ev); err != nil {
				r := Explain(err, ev.Kind, env)
				st.Reason = &r
			} else {
				st.Available = true
			}
			if st.Available && ev.Name == EvCPUMigrations && !kernelOK {
				st.Available = false
				st.Reason = &Reason{Code: ReasonParanoid, Message: fmt.Sprintf("CPU migrations happen in kernel context and read 0 "+
					"when only user space may be counted (perf_event_paranoid=%d, no CAP_PERFMON)", env.Paranoid)}
			}
			a.Events = append(a.Events, st)
		}
	}
	a.Software = classStatus(a.Events, KindSoftware)
	a.Hardware = classStatus(a.Events, KindHardware)
	a.Raw = classStatus(a.Events, KindRaw)
	return a
}

// KernelCountingAllowed reports whether an unprivileged process may count
// kernel context too: perf_event_paranoid <= 1, or CAP_PERFMON.
func KernelCountingAllowed(env Env) bool {
	return env.CapPerfmon || (env.Paranoid != ParanoidUnknown && env.Paranoid <= 1)
}
