package sizing

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// MeasuredMaxAge is how long a stored measurement of the last cache level
// is reused before the probe runs again.
const MeasuredMaxAge = 7 * 24 * time.Hour

// measuredFile is the form a measurement is stored in: the size, when it
// was taken, and the machine it describes.
type measuredFile struct {
	Bytes   int64     `json:"bytes"`
	At      time.Time `json:"at"`
	Machine string    `json:"machine"`
}

// machineID names this machine for a stored measurement: host, CPUs and
// architecture, so that a home directory shared between machines, or a
// VM resized, measures again.
func machineID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s-%s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}

// LoadMeasured returns the last cache level stored in dir for this
// machine, if it is younger than MeasuredMaxAge at now.
func LoadMeasured(dir string, now time.Time) (int64, bool) {
	if dir == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, "last-level.json"))
	if err != nil {
		return 0, false
	}
	var m measuredFile
	if json.Unmarshal(b, &m) != nil || m.Bytes <= 0 || m.Machine != machineID() || now.Sub(m.At) > MeasuredMaxAge || now.Before(m.At) {
		return 0, false
	}
	return m.Bytes, true
}

// SaveMeasured stores a measurement of the last cache level in dir.
func SaveMeasured(dir string, bytes int64, now time.Time) error {
	if bytes <= 0 {
		return errors.New("sizing: no measurement to store")
	}
	b, err := json.Marshal(measuredFile{Bytes: bytes, At: now, Machine: machineID()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sizing: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "last-level-*.json")
	if err != nil {
		return fmt.Errorf("sizing: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sizing: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, "last-level.json")); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sizing: %w", err)
	}
	return nil
}
