package conntrack

// What a Tracker counted.

import (
	"fmt"
)

// Stats are what a Tracker counted.
type Stats struct {
	Open              int    // connections open and followed now
	Busy              int    // of which busy
	BacklogAnswered   int    // connections taken from the kernel's accept queue by DrainBacklog
	ClosedIdle        uint64 // idle connections Drain closed (with the goodbye)
	ClosedAfterAnswer uint64 // connections busy at Drain, closed once they answered
	LateInput         uint64 // connections whose input arrived after the drain decided to close them
	BusyAtDeadline    int    // connections still busy when Drain's ctx ran out; -1: it did not
	MaxConns          int    // the cap; 0 with a listener layer
	PeakConns         int    // the most open at once under the cap
	AcceptPaused      uint64 // times accepting paused at the cap
}

// Stats returns the counts so far.
func (t *Tracker) Stats() Stats {
	s := Stats{
		Open:              t.Open(),
		Busy:              t.Busy(),
		ClosedIdle:        t.closedIdle.Load(),
		ClosedAfterAnswer: t.closedAfterAnswer.Load(),
		LateInput:         t.lateInput.Load(),
		BusyAtDeadline:    int(t.busyAtDeadline.Load()),
	}
	if l := t.listener(); l != nil && l.backlog != nil {
		s.BacklogAnswered = int(l.backlog.taken.Load())
	}
	if t.cap != nil {
		cs := t.cap.Stats()
		s.MaxConns, s.PeakConns, s.AcceptPaused = cs.Max, cs.Peak, cs.Paused
	}
	return s
}

// Report is Stats in a few words, for an entrypoint's DrainReport:
// "closed_idle=12 closed_after_answer=3 backlog_answered=2 late_input=0
// busy_at_deadline=0 conns_max=384 conns_peak=40" (busy_at_deadline only when
// Drain ran out of time, the cap's figures only for the Tracker's own cap, with
// accept_paused=N when it was reached).
func (t *Tracker) Report() string {
	s := t.Stats()
	r := fmt.Sprintf("closed_idle=%d closed_after_answer=%d backlog_answered=%d late_input=%d",
		s.ClosedIdle, s.ClosedAfterAnswer, s.BacklogAnswered, s.LateInput)
	if s.BusyAtDeadline >= 0 {
		r += fmt.Sprintf(" busy_at_deadline=%d", s.BusyAtDeadline)
	}
	if t.cap != nil {
		r += " " + t.cap.Report()
	}
	return r
}
