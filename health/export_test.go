package health

// ErrorType is errorType, for the external tests.
var ErrorType = errorType

// IsGating reports whether c was declared with Gating.
func IsGating(c Check) bool {
	d, ok := c.(declared)
	return ok && d.gates
}
