package web

// Warming the shared measurements: when the teacher pushes a lesson, the
// server measures its latency cells at once, under a learner's limits, so
// that the learners who run them a moment later share that run instead of
// each starting one (kernel.SharedMeasurements).

import (
	"context"
	"time"

	"cachebook/kernel"
	"cachebook/notebook"
)

// WarmSession is the kernel session that measures a pushed lesson's
// latency cells for the class to share. It runs under a learner's limits
// (ClassConfig.CellMemory), so that its measurements are the ones the
// learners' cells ask for.
const WarmSession = "classwarm"

// warm measures the latency cells of lesson id in WarmSession, in the
// background; it does nothing without shared measurements or lessons.
func (s *Server) warm(id string) {
	if s.class == nil || s.class.shared == nil || s.cfg.Lessons == nil || id == "" {
		return
	}
	nb, err := s.cfg.Lessons.Open(id)
	if err != nil {
		return
	}
	var cells []*notebook.Cell
	for _, c := range nb.Cells {
		if c.Kind == notebook.KindLatency {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return
	}
	sub, err := s.mgr.Attach(WarmSession, 0)
	if err != nil {
		s.log.Warn("class: cannot warm the shared measurements", "lesson", id, "err", err)
		return
	}
	want := map[string]bool{}
	for _, c := range cells {
		m := kernel.NewMessage(kernel.ChannelShell, kernel.MsgExecuteRequest, "classwarm", kernel.Header{},
			kernel.ExecuteRequest{Code: c.Source, Kind: string(c.Kind), Attrs: c.Attrs, CellID: c.ID})
		want[m.Header.MsgID] = true
		if err := sub.Kernel().Handle(sub, &m); err != nil {
			s.log.Warn("class: cannot warm the shared measurements", "lesson", id, "err", err)
			delete(want, m.Header.MsgID)
		}
	}
	go func() {
		// Read the session's frames until its cells are answered (an
		// unread subscription would be dropped as slow).
		defer sub.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for len(want) > 0 {
			select {
			case data, ok := <-sub.C:
				if !ok {
					return
				}
				m, err := kernel.Decode(data, 0)
				if err == nil && m.Header.MsgType == kernel.MsgExecuteReply {
					delete(want, m.ParentHeader.MsgID)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
}
