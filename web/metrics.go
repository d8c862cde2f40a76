package web

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"cachebook/kernel"
)

// metrics are the server's Prometheus metrics, on a private registry.
type metrics struct {
	reg         *prometheus.Registry
	connections atomic.Int64
	rejected    *prometheus.CounterVec
	cells       *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry, mgr func() *kernel.Manager, conns func() float64) *metrics {
	m := &metrics{reg: reg}
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachebook_frames_rejected_total",
		Help: "Requests and websocket frames refused, by reason (token, origin, host, too_large, bad_message, binary).",
	}, []string{"reason"})
	m.cells = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "cachebook_cell_duration_seconds",
		Help:    "Run time of executed cells by kind and reply status (aborted cells count with 0).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms .. 262 s
	}, []string{"kind", "status"})
	stat := func(f func(kernel.ManagerStats) int) func() float64 {
		return func() float64 {
			if g := mgr(); g != nil {
				return float64(f(g.Stats()))
			}
			return 0
		}
	}
	reg.MustRegister(
		m.rejected, m.cells,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cachebook_sessions", Help: "Live kernel sessions."},
			stat(func(s kernel.ManagerStats) int { return s.Sessions })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cachebook_connections", Help: "Open websocket connections."}, conns),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cachebook_queue_depth", Help: "Cells queued in sessions or waiting for admission."},
			stat(func(s kernel.ManagerStats) int { return s.Queued })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cachebook_cells_running", Help: "Cells admitted and running."},
			stat(func(s kernel.ManagerStats) int { return s.Running })),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// observeCell records one finished cell.
func (m *metrics) observeCell(kind, status string, d time.Duration) {
	m.cells.WithLabelValues(kind, status).Observe(d.Seconds())
}
