// Package hosttest runs a service in-process so its authors can test their own
// entrypoints, hooks and budgets: start the spec, stop it as SIGTERM would, and assert
// the stages it went through and what Run returned.
//
// A Harness works inside a testing/synctest bubble, where time is virtual: a drain
// with a 30-second grace, a drain delay or a hung Stop abandoned after StepTimeout
// all run in microseconds, deterministically.
//
//	synctest.Test(t, func(t *testing.T) {
//		x := hosttest.Start(t, spec)
//		x.WaitStage(host.StageServe)
//		x.Stop()
//		if err := x.Wait(); err != nil {
//			t.Fatal(err)
//		}
//	})
//
// The Harness disables the probe listener (real sockets do not work in a bubble),
// logs to the test, and reads no environment variable unless given host.WithEnv.
//
// A network entrypoint is tested through a Network: an in-memory listener to give
// the entrypoint, and a dialer and an HTTP client to reach it, whose blocked reads,
// writes, accepts and dials all let virtual time advance. A datagram entrypoint is
// tested through NewPacketPair: two connected in-memory net.PacketConns, the server's
// to give the entrypoint and the client's to send from.
package hosttest
