// Package prestop is the guard of what the probe port lets the pod network do: the
// credential a request must carry (Token) and the HTTP endpoint that begins a drain
// ahead of the stop (Endpoint). The Host decides what a drain ahead of the stop does
// and where it stands in the sequence; this package only decides who may ask for
// it, answers, counts and logs. The Host's profiling endpoint uses the same Token.
package prestop
