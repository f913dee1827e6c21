//go:build !unix

package grpcentry

// openFileLimit is 0 where the limit cannot be read: the default cap is then its floor's
// usual value (see defaultMaxConnections).
func openFileLimit() uint64 { return 0 }
