package perf

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func TestExplain(t *testing.T) {
	vm := Env{Paranoid: 2, Hypervisor: true, ExcludeKern: true}
	bare := Env{Paranoid: 2, HasPMU: true, ExcludeKern: true}
	tests := []struct {
		name     string
		err      error
		kind     Kind
		env      Env
		code     string
		contains string
	}{
		{"seccomp", syscall.EPERM, KindSoftware, vm, ReasonSeccomp, "cap-add PERFMON"},
		{"enosys", syscall.ENOSYS, KindSoftware, vm, ReasonNoSyscall, "seccomp"},
		{"paranoid 2 without exclude_kernel", syscall.EACCES, KindSoftware, Env{Paranoid: 2}, ReasonParanoid, "exclude_kernel"},
		{"paranoid 3", syscall.EACCES, KindSoftware, Env{Paranoid: 3, ExcludeKern: true}, ReasonParanoid, "perf_event_paranoid=3"},
		{"paranoid 4", syscall.EACCES, KindHardware, Env{Paranoid: 4, ExcludeKern: true}, ReasonParanoid, "unprivileged"},
		{"paranoid 1 cpu-wide", syscall.EACCES, KindHardware, Env{Paranoid: 1, ExcludeKern: true}, ReasonParanoid, "CAP_PERFMON"},
		{"paranoid unknown", syscall.EACCES, KindHardware, Env{Paranoid: ParanoidUnknown}, ReasonParanoid, "unreadable"},
		{"vm no pmu enoent", syscall.ENOENT, KindHardware, vm, ReasonNoPMU, "virtual machine"},
		{"vm no pmu eopnotsupp", syscall.EOPNOTSUPP, KindHardware, vm, ReasonNoPMU, "virtual machine"},
		{"raw on vm", syscall.ENOENT, KindRaw, vm, ReasonNoPMU, "virtual PMU"},
		{"no pmu bare", syscall.ENODEV, KindHardware, Env{Paranoid: 2}, ReasonNoPMU, "no hardware PMU"},
		{"unmapped generic", syscall.ENOENT, KindHardware, bare, ReasonUnsupported, "does not support"},
		{"software enoent", syscall.ENOENT, KindSoftware, vm, ReasonUnsupported, "does not support"},
		{"einval", syscall.EINVAL, KindRaw, bare, ReasonInvalid, "raw config"},
		{"e2big", syscall.E2BIG, KindHardware, bare, ReasonInvalid, "old kernel"},
		{"ebusy", syscall.EBUSY, KindHardware, bare, ReasonBusy, "NMI watchdog"},
		{"emfile", syscall.EMFILE, KindHardware, bare, ReasonResources, "file descriptors"},
		{"enomem", syscall.ENOMEM, KindHardware, bare, ReasonResources, "memory"},
		{"other errno", syscall.EIO, KindHardware, bare, ReasonUnknown, "perf_event_open failed"},
		{"wrapped", fmt.Errorf("perf_event_open cycles: %w", syscall.EACCES), KindHardware, Env{Paranoid: 3}, ReasonParanoid, "paranoid=3"},
		{"not an errno", errors.New("boom"), KindHardware, bare, ReasonUnknown, "boom"},
		{"nil", nil, KindHardware, bare, ReasonUnknown, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Explain(tt.err, tt.kind, tt.env)
			if r.Code != tt.code {
				t.Errorf("code = %q, want %q (%s)", r.Code, tt.code, r.Message)
			}
			if !strings.Contains(r.Message, tt.contains) {
				t.Errorf("message %q does not contain %q", r.Message, tt.contains)
			}
			var errno syscall.Errno
			if errors.As(tt.err, &errno) && r.Errno == "" {
				t.Errorf("errno name missing")
			}
		})
	}
}

func TestProbeWith(t *testing.T) {
	zen5 := CPU{Vendor: "AuthenticAMD", Family: 26, Model: 2}
	tests := []struct {
		name           string
		pmus           []string
		env            Env
		open           func(Event) error
		sw, hw, raw    bool
		hwCode, swCode string
	}{
		{
			name: "this VM: software only",
			pmus: []string{"breakpoint", "msr", "software", "tracepoint", "uprobe"},
			env:  Env{Paranoid: 2, Hypervisor: true},
			open: func(ev Event) error {
				if ev.Kind == KindSoftware {
					return nil
				}
				return syscall.ENOENT
			},
			sw: true, hwCode: ReasonNoPMU,
		},
		{
			name:   "container seccomp",
			pmus:   []string{"cpu", "software"},
			env:    Env{Paranoid: 2},
			open:   func(Event) error { return syscall.EPERM },
			hwCode: ReasonSeccomp, swCode: ReasonSeccomp,
		},
		{
			name:   "debian paranoid 3",
			pmus:   []string{"cpu", "software"},
			env:    Env{Paranoid: 3},
			open:   func(Event) error { return syscall.EACCES },
			hwCode: ReasonParanoid, swCode: ReasonParanoid,
		},
		{
			name: "bare metal, all work",
			pmus: []string{"cpu", "software", "amd_l3"},
			env:  Env{Paranoid: 2},
			open: func(Event) error { return nil },
			sw:   true, hw: true, raw: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := probeWith("linux", zen5, tt.env, tt.pmus, tt.open)
			if a.Recipe != "amd-zen5" {
				t.Errorf("recipe %s", a.Recipe)
			}
			if a.Software.Available != tt.sw || a.Hardware.Available != tt.hw || a.Raw.Available != tt.raw {
				t.Fatalf("sw/hw/raw = %v/%v/%v, want %v/%v/%v", a.Software.Available, a.Hardware.Available, a.Raw.Available, tt.sw, tt.hw, tt.raw)
			}
			if tt.hwCode != "" && (a.Hardware.Reason == nil || a.Hardware.Reason.Code != tt.hwCode) {
				t.Errorf("hardware reason %+v, want %s", a.Hardware.Reason, tt.hwCode)
			}
			if tt.swCode != "" && (a.Software.Reason == nil || a.Software.Reason.Code != tt.swCode) {
				t.Errorf("software reason %+v, want %s", a.Software.Reason, tt.swCode)
			}
			if !strings.Contains(a.Summary(), "software") {
				t.Errorf("summary %q", a.Summary())
			}
			for _, e := range a.Events {
				if !e.Available && e.Reason == nil {
					t.Errorf("%s unavailable without reason", e.Name)
				}
			}
		})
	}
}

func TestProbeKernelCounting(t *testing.T) {
	cpu := CPU{Vendor: "GenuineIntel", Family: 6, Model: 0x55}
	for _, tt := range []struct {
		env        Env
		kernel     bool
		migrations bool
	}{
		{Env{Paranoid: 2}, false, false},
		{Env{Paranoid: 1}, true, true},
		{Env{Paranoid: -1}, true, true},
		{Env{Paranoid: 2, CapPerfmon: true}, true, true},
		{Env{Paranoid: ParanoidUnknown}, false, false},
	} {
		var kernelSeen bool
		a := probeWith("linux", cpu, tt.env, []string{"cpu"}, func(ev Event) error {
			if ev.KernelToo {
				kernelSeen = true
				if ev.Kind != KindSoftware {
					t.Errorf("%s opened with kernel counting", ev.Name)
				}
			}
			return nil
		})
		if a.SoftwareKernel != tt.kernel || kernelSeen != tt.kernel {
			t.Errorf("paranoid %d: SoftwareKernel %v, opened with kernel %v", tt.env.Paranoid, a.SoftwareKernel, kernelSeen)
		}
		st, _ := findStatus(a.Events, EvCPUMigrations)
		if st.Available != tt.migrations || (!st.Available && (st.Reason == nil || st.Reason.Code != ReasonParanoid)) {
			t.Errorf("paranoid %d: migrations %+v", tt.env.Paranoid, st)
		}
	}
}
