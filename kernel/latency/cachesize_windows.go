package latency

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// platformCaches reads the cache sizes Windows reports through
// GetLogicalProcessorInformationEx.
func platformCaches() ([]Cache, string) {
	buf, err := logicalProcessorInformation(relationCache)
	if err != nil {
		return nil, ""
	}
	c, err := ParseProcessorCaches(buf, int(unsafe.Sizeof(uintptr(0))))
	if err != nil || len(c) == 0 {
		return nil, ""
	}
	return c, "windows"
}

// logicalProcessorInformation calls GetLogicalProcessorInformationEx
// (kernel32, Windows 7 and later; golang.org/x/sys/windows does not wrap
// it) for relationship, growing the buffer as the call asks.
func logicalProcessorInformation(relationship uint32) ([]byte, error) {
	proc := windows.NewLazySystemDLL("kernel32.dll").NewProc("GetLogicalProcessorInformationEx")
	if err := proc.Find(); err != nil {
		return nil, fmt.Errorf("find GetLogicalProcessorInformationEx: %w", err)
	}
	n := uint32(1024)
	for range 4 { // the size can change between calls (processors added)
		buf := make([]byte, max(n, 64))
		r, _, err := proc.Call(uintptr(relationship), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)))
		if r != 0 {
			return buf[:n], nil
		}
		if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) {
			return nil, fmt.Errorf("GetLogicalProcessorInformationEx: %w", err)
		}
	}
	return nil, errors.New("GetLogicalProcessorInformationEx: the buffer kept growing")
}
