package host

// ShutdownProgress is how far s has got, as /debug/lifecycle's "shutdown" names it:
// not_started, started, cleanup or completed.
func ShutdownProgress(s *Shutdown) string { return s.progress().String() }

// ErrAlreadyRun is what a second Run returns.
var ErrAlreadyRun = errAlreadyRun
