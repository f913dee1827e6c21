// Package testenv starts real services for integration tests: redis-server and
// PostgreSQL, each on a free loopback port in its own temporary directory, as a child
// of the test binary.
//
// A package starts what it needs once, in TestMain, and stops it after m.Run, before
// the goroutine-leak check:
//
//	var env testenv.Env
//
//	func TestMain(m *testing.M) {
//		os.Exit(testenv.Run(m, &env, testenv.WithRedis(), testenv.WithPostgres()))
//	}
//
//	func TestSomething(t *testing.T) {
//		r := env.Redis(t) // skips, or fails under CI=true, when redis-server is missing
//		client := redis.NewClient(&redis.Options{Addr: r.Addr()})
//		...
//	}
//
// Run starts the services, runs the tests, stops the services whatever the tests'
// outcome, and then, only when every test passed, looks for leaked goroutines with
// goleak (as goleak.VerifyTestMain does). It returns the exit code; TestMain passes it
// to os.Exit. A service that cannot start does not stop the package: the error is kept
// in the Env and reported by the tests that ask for the service.
//
// Packages that want the steps spelled out write the same thing by hand:
//
//	func TestMain(m *testing.M) {
//		r, rerr := testenv.StartRedis()
//		redisErr = rerr // tests call testenv.Require(t, redisErr)
//		code := m.Run()
//		if r != nil {
//			r.Stop()
//		}
//		if code == 0 {
//			if err := goleak.Find(); err != nil {
//				fmt.Fprintln(os.Stderr, err)
//				code = 1
//			}
//		}
//		os.Exit(code)
//	}
//
// The services are shared by every test of the package. A test that kills or restarts
// one must not run in parallel with tests that use it, and must leave it running; a
// test that needs a private server calls StartRedis or StartPostgres itself and stops
// it in t.Cleanup.
//
// # Missing services
//
// When a binary is not installed the Start functions return an error wrapping
// ErrMissing that names the binary and the Debian package providing it. Require turns
// such an error into t.Skip on a developer's machine and into t.Fatal when the
// environment variable CI is "true": CI must never pass by skipping. Any other start
// error always fails the test.
//
// # Process hygiene
//
// Every server runs in its own process group with a parent-death signal (SIGKILL, on
// Linux), so it dies with the test binary even when the binary is killed, panics or
// times out. Kernel caveat: that signal follows the OS thread that started the child;
// the Go runtime keeps threads alive unless a goroutine exits while locked to one
// (runtime.LockOSThread), so do not start services from such a goroutine. Temporary
// directories are removed by Stop; those of a binary that died without Stop are removed
// by the next Start in the same temporary directory.
//
// Under root (as in CI), PostgreSQL refuses to run, so its processes run as the
// "postgres" user: the data directory is handed to that user and every parent of it
// must be traversable.
//
// testenv is for tests only and supports Linux (other Unix systems without the
// parent-death signal).
package testenv
