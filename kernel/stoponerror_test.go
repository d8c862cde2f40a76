package kernel

import (
	"testing"
	"time"
)

// execOpt is an execute request with the flags under test.
func execOpt(code, kind string, stop, silent bool, store *bool) *Message {
	m := NewMessage(ChannelShell, MsgExecuteRequest, "client", Header{}, ExecuteRequest{Code: code, Kind: kind,
		StopOnError: &stop, Silent: silent, StoreHistory: store})
	return &m
}

// replies reads frames until the replies to ids have come, and returns
// their contents in the order of ids and the order the replies came in.
func replies(t *testing.T, sub *Subscription, ids ...string) (byID []ExecuteReply, order []string) {
	t.Helper()
	got := map[string]ExecuteReply{}
	readUntil(t, sub, func(f *Message) bool {
		if f.Header.MsgType == MsgExecuteReply {
			var r ExecuteReply
			_ = f.DecodeContent(&r)
			got[f.ParentHeader.MsgID] = r
			order = append(order, f.ParentHeader.MsgID)
		}
		for _, id := range ids {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		byID = append(byID, got[id])
	}
	return byID, order
}

// TestStopOnError: a cell that fails with stop_on_error aborts the
// requests that arrive before its reply — also those still on their way
// when it failed (a "Run all") — and no others.
func TestStopOnError(t *testing.T) {
	const wait = 150 * time.Millisecond
	for _, tc := range []struct {
		name   string
		first  *Message // sent first
		delay  time.Duration
		want   string // status of the three sent after it
		failed bool   // the first one's reply is an error
	}{
		{"stop, the rest on its way", execOpt("", "fail", true, false, nil), 20 * time.Millisecond, StatusAborted, true},
		{"stop, the rest queued", execOpt("", "fail", true, false, nil), 0, StatusAborted, true},
		{"no stop_on_error", execOpt("", "fail", false, false, nil), 20 * time.Millisecond, StatusOK, true},
		{"silent failure", execOpt("", "fail", true, true, nil), 20 * time.Millisecond, StatusOK, true},
		{"no failure", execOpt("a", "echo", true, false, nil), 20 * time.Millisecond, StatusOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t, ManagerConfig{StopOnErrorWait: wait})
			sub, _ := m.Attach("s", 0)
			s := sub.Kernel()
			start := time.Now()
			_ = s.Handle(sub, tc.first)
			time.Sleep(tc.delay) // the cell has failed by now
			ids := []string{tc.first.Header.MsgID}
			for _, c := range []string{"b", "c", "d"} {
				r := execOpt(c, "echo", true, false, nil)
				ids = append(ids, r.Header.MsgID)
				_ = s.Handle(sub, r)
			}
			sent := time.Since(start)
			got, order := replies(t, sub, ids...)
			if sent >= wait {
				t.Skipf("sending took %v, longer than the wait %v: the machine is too busy to tell", sent, wait)
			}
			if failed := got[0].Status == StatusError; failed != tc.failed {
				t.Errorf("first reply %+v", got[0])
			}
			for i, r := range got[1:] {
				if r.Status != tc.want {
					t.Errorf("request %d after the first: %s, want %s", i+1, r.Status, tc.want)
				}
			}
			for i := range ids {
				if order[i] != ids[i] {
					t.Errorf("replies came in order %v, want the requests' %v", order, ids)
					break
				}
			}
			// Sent after the error was seen, a request runs.
			after := execOpt("e", "echo", true, false, nil)
			_ = s.Handle(sub, after)
			if r, _ := replies(t, sub, after.Header.MsgID); r[0].Status != StatusOK {
				t.Errorf("request sent after the replies: %+v", r[0])
			}
		})
	}
}

// TestExecutionCountFlags: silent and store_history=false executions do
// not advance the execution count, as in ipykernel (1, 1, 1, 2).
func TestExecutionCountFlags(t *testing.T) {
	m := newTestManager(t, ManagerConfig{})
	sub, _ := m.Attach("s", 0)
	s := sub.Kernel()
	no := false
	reqs := []*Message{
		execOpt("a", "echo", true, false, nil),
		execOpt("b", "echo", true, true, nil),
		execOpt("c", "echo", true, false, &no),
		execOpt("d", "echo", true, false, nil),
	}
	var ids []string
	for _, r := range reqs {
		ids = append(ids, r.Header.MsgID)
		_ = s.Handle(sub, r)
	}
	got, _ := replies(t, sub, ids...)
	for i, want := range []int{1, 1, 1, 2} {
		if got[i].ExecutionCount != want || got[i].Status != StatusOK {
			t.Errorf("reply %d: %+v, want ok with execution_count %d", i, got[i], want)
		}
	}
}
