package perf

import (
	"errors"
	"fmt"
	"syscall"
)

// Reason codes for an unavailable event or event class.
const (
	ReasonNoPMU       = "no-pmu"            // VM without virtual PMU, or event unmapped
	ReasonUnsupported = "unsupported-event" // this CPU/PMU does not know the event
	ReasonParanoid    = "paranoid"          // perf_event_paranoid forbids it
	ReasonSeccomp     = "seccomp"           // container seccomp or LSM denied the syscall
	ReasonNoSyscall   = "no-syscall"        // ENOSYS: filtered or kernel without perf
	ReasonBusy        = "counters-busy"     // EBUSY, or time_running = 0
	ReasonResources   = "resources"         // EMFILE/ENOMEM
	ReasonInvalid     = "invalid-config"    // EINVAL/E2BIG
	ReasonNotLinux    = "not-linux"         // no perf_event_open on this OS
	ReasonBrowser     = "browser"           // js/wasm
	ReasonNotCounted  = "not-counted"       // opened but never scheduled
	ReasonGroupFailed = "group-failed"      // the group could not be opened on this thread
	ReasonUnknown     = "unknown"
)

// Reason says why something cannot be counted, for people.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Errno is the syscall error name when one was returned ("EACCES").
	Errno string `json:"errno,omitempty"`
}

// Env is what the probe knows about the system when explaining an error.
type Env struct {
	// Paranoid is /proc/sys/kernel/perf_event_paranoid; ParanoidUnknown
	// when it could not be read.
	Paranoid    int
	HasPMU      bool // a core PMU (cpu, cpu_core, cpu_atom) is in sysfs
	CapPerfmon  bool // CAP_PERFMON or CAP_SYS_ADMIN is effective
	Hypervisor  bool // /proc/cpuinfo lists the "hypervisor" flag
	ExcludeKern bool // the attr had exclude_kernel set
}

// ParanoidUnknown marks an unreadable perf_event_paranoid.
const ParanoidUnknown = -100

// errnoName returns the symbolic name of the errnos Explain knows.
func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EPERM:
		return "EPERM"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EACCES:
		return "EACCES"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.EMFILE:
		return "EMFILE"
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.E2BIG:
		return "E2BIG"
	case syscall.ENODEV:
		return "ENODEV"
	}
	return fmt.Sprintf("errno %d", uintptr(e))
}

// Explain maps an error from perf_event_open to a Reason. It is a pure
// function of the error, the event kind and the environment. Errors that
// do not wrap a syscall.Errno get ReasonUnknown.
func Explain(err error, kind Kind, env Env) Reason {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		msg := "unknown error"
		if err != nil {
			msg = err.Error()
		}
		return Reason{Code: ReasonUnknown, Message: msg}
	}
	r := Reason{Errno: errnoName(errno)}
	hw := kind == KindHardware || kind == KindRaw
	switch errno {
	case syscall.ENOSYS:
		r.Code = ReasonNoSyscall
		r.Message = "perf_event_open is not available: the kernel lacks CONFIG_PERF_EVENTS or a seccomp filter returns ENOSYS"
	case syscall.EPERM:
		r.Code = ReasonSeccomp
		r.Message = "perf_event_open was denied (EPERM): a container's seccomp profile or an LSM blocks it; " +
			"run the container with --cap-add PERFMON or a seccomp profile that allows perf_event_open"
	case syscall.EACCES:
		r.Code = ReasonParanoid
		switch {
		case env.Paranoid == ParanoidUnknown:
			r.Message = "permission denied by perf_event_paranoid (value unreadable)"
		case env.Paranoid >= 3:
			r.Message = fmt.Sprintf("perf_event_paranoid=%d: this distribution disables perf for unprivileged users; "+
				"run as root or set kernel.perf_event_paranoid=2", env.Paranoid)
		case env.Paranoid == 2 && !env.ExcludeKern:
			r.Message = "perf_event_paranoid=2 allows user-space counting only (exclude_kernel is required)"
		default:
			r.Message = fmt.Sprintf("perf_event_paranoid=%d forbids this event for an unprivileged process; "+
				"grant CAP_PERFMON or lower the sysctl", env.Paranoid)
		}
	case syscall.ENOENT, syscall.EOPNOTSUPP, syscall.ENODEV:
		switch {
		case hw && !env.HasPMU && env.Hypervisor:
			r.Code = ReasonNoPMU
			r.Message = "no hardware PMU: this is a virtual machine without a virtual PMU (software events only)"
		case hw && !env.HasPMU:
			r.Code = ReasonNoPMU
			r.Message = "no hardware PMU is exposed by the kernel (no core PMU in /sys/bus/event_source/devices)"
		default:
			r.Code = ReasonUnsupported
			r.Message = "this CPU or kernel does not support the event"
		}
	case syscall.EINVAL, syscall.E2BIG:
		r.Code = ReasonInvalid
		r.Message = "the kernel rejected the event attributes (invalid raw config for this CPU or an old kernel)"
	case syscall.EBUSY:
		r.Code = ReasonBusy
		r.Message = "the counters are in use by another tool or the NMI watchdog"
	case syscall.EMFILE, syscall.ENOMEM:
		r.Code = ReasonResources
		r.Message = "out of file descriptors or memory for counters"
	default:
		r.Code = ReasonUnknown
		r.Message = "perf_event_open failed: " + errno.Error()
	}
	return r
}
