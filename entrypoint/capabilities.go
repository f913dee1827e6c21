package entrypoint

// Caps is what an entrypoint can do beyond the four methods of Entrypoint: each
// field holds the entrypoint as that optional interface, or nil when it does not
// implement it. Capabilities fills it; the Host probes each registered entrypoint
// once and reads the answer from here ever after, so that no other part of it
// type-asserts.
//
// The interfaces that live beside the types they return — fleet.Marker,
// health.MonitorUser, host.Campaigner — are not here: this package may not
// import theirs. Their owners probe for them.
type Caps struct {
	InFlight     InFlighter     // counts the units in flight
	DrainReport  DrainReporter  // says what its Drain did
	StatusDetail StatusDetailer // says why it is not taking work
	DrainTimer   DrainTimer     // needs a known time to end its work once drained
	Defaults     DefaultsUser   // takes the Host's telemetry
	Finite       Finite         // a task: its work ends on its own
}

// Capabilities probes e for every optional interface of this package and returns
// what it found. A nil e has none.
func Capabilities(e Entrypoint) Caps {
	var c Caps
	if e == nil {
		return c
	}
	c.InFlight, _ = e.(InFlighter)
	c.DrainReport, _ = e.(DrainReporter)
	c.StatusDetail, _ = e.(StatusDetailer)
	c.DrainTimer, _ = e.(DrainTimer)
	c.Defaults, _ = e.(DefaultsUser)
	c.Finite, _ = e.(Finite)
	return c
}
