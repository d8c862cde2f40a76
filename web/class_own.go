package web

// Measurements a learner took in their own browser (the WebAssembly
// kernel) and sent to the class view: the room sees its laptops beside
// the server's runs.

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"cachebook/notebook/predict"
)

// MachineInfo describes the machine a learner measured in their own
// browser: what the browser tells of it and the plateaus its latency
// curve shows.
type MachineInfo struct {
	// Cores is navigator.hardwareConcurrency (0: not told).
	Cores int `json:"cores"`
	// Browser names the browser and its version ("Chrome 131").
	Browser string `json:"browser"`
	// Platform is the operating system the browser reports.
	Platform string `json:"platform,omitempty"`
	// MemoryGiB is navigator.deviceMemory (rounded by the browser; 0: not told).
	MemoryGiB float64 `json:"memory_gib,omitempty"`
	// Plateaus are the levels the measured curve shows (L1, L2, L3,
	// memory) with their latency and, for caches, their estimated size.
	Plateaus []Plateau `json:"plateaus,omitempty"`
}

// Plateau is one level of a latency curve.
type Plateau struct {
	Name      string  `json:"name"`
	Ns        float64 `json:"ns"`
	SizeBytes int64   `json:"size_bytes,omitempty"`
}

// ownRun is what a learner sends of a measurement cell run in their own
// browser (POST /api/class/me/own).
type ownRun struct {
	Cell       string           `json:"cell"`
	Kind       string           `json:"kind"`
	Curve      []curvePoint     `json:"curve"`
	Machine    MachineInfo      `json:"machine"`
	Prediction *predict.Outcome `json:"prediction,omitempty"`
}

// ownCurve is a learner's latest own-machine latency curve.
type ownCurve struct {
	curve   []curvePoint
	machine MachineInfo
	at      time.Time
}

// Bounds of an own-machine report: it comes from the learner's page.
const (
	maxOwnPoints   = 256
	maxOwnPlateaus = 8
	maxOwnText     = 80
)

// check validates a report and trims its free text.
func (o *ownRun) check() error {
	if o.Kind != "latency" {
		return fmt.Errorf("%w: only latency curves are shared with the class (got kind %q)", errBadRequest, o.Kind)
	}
	if len(o.Curve) == 0 || len(o.Curve) > maxOwnPoints {
		return fmt.Errorf("%w: a curve needs 1 to %d points", errBadRequest, maxOwnPoints)
	}
	for _, p := range o.Curve {
		if p.Bytes <= 0 || !(p.Ns > 0 && p.Ns < 1e9) {
			return fmt.Errorf("%w: curve point %+v out of range", errBadRequest, p)
		}
	}
	if len(o.Machine.Plateaus) > maxOwnPlateaus {
		o.Machine.Plateaus = o.Machine.Plateaus[:maxOwnPlateaus]
	}
	o.Machine.Browser = clip(o.Machine.Browser)
	o.Machine.Platform = clip(o.Machine.Platform)
	for i := range o.Machine.Plateaus {
		o.Machine.Plateaus[i].Name = clip(o.Machine.Plateaus[i].Name)
	}
	o.Machine.Cores = min(max(o.Machine.Cores, 0), 4096)
	o.Cell = clip(o.Cell)
	return nil
}

// clip trims s to a short line of text.
func clip(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, s))
	if r := []rune(s); len(r) > maxOwnText {
		s = string(r[:maxOwnText])
	}
	return s
}

// handleOwn takes a learner's own-machine measurement.
func (s *Server) handleOwn(r *http.Request) (any, error) {
	who := s.identify(r)
	if who.role != roleLearner {
		return nil, fmt.Errorf("%w: only a learner's own machine is measured here", errForbidden)
	}
	var o ownRun
	if err := decodeBody(r, &o); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	s.class.own(who.learner, o)
	return map[string]any{"status": "ok"}, nil
}

// own records an own-machine run of learner l.
func (c *class) own(l *learner, o ownRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.removed {
		return
	}
	l.ownCurve = &ownCurve{curve: o.Curve, machine: o.Machine, at: c.now()}
	if p := o.Prediction; p != nil {
		if p.Cell == "" {
			p.Cell = o.Cell
		}
		if p.Cell != "" {
			l.predictions[p.Cell] = p
			l.predSource[p.Cell] = SourceOwn
		}
	}
	c.dirty = true
}

// Where a curve or guess of the class view was measured.
const (
	SourceServer = "server"
	SourceOwn    = "own machine"
)
