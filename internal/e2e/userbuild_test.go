package e2e

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
)

// TestUserBuildHasNoTestKnobs: the example built as a user builds it (no e2e tag)
// ignores EXAMPLE_FAIL_AFTER and serves neither test route, while the tests' build
// (-tags e2e, the package's bin) fails on the knob and serves both: the check tells
// the two builds apart.
func TestUserBuildHasNoTestKnobs(t *testing.T) {
	user, err := proctest.Build(t.TempDir(), "github.com/servicewright/servicewright/cmd/example", "-tags=devbroker")
	if err != nil {
		t.Fatal(err)
	}
	// The tests' build: the chaos entrypoint fails at once, exit 1.
	p, _ := startExample(t, "EXAMPLE_FAIL_AFTER=1ms")
	if code := exitCode(t, p); code != 1 {
		t.Fatalf("the e2e build with EXAMPLE_FAIL_AFTER=1ms exited %d, want 1", code)
	}

	routes := func(bin string, knobs ...string) map[string]int {
		httpAddr := freeAddr(t)
		p := proctest.Start(t, bin, append([]string{"PROBE_ADDR=" + freeAddr(t), "HTTP_ADDR=" + httpAddr,
			"GRPC_ADDR=127.0.0.1:0", "SW_LOG_LEVEL=debug"}, knobs...)...)
		mustLog(t, p, stage("serve"), 60*time.Second)
		got := map[string]int{}
		for _, path := range []string{"/burn?n=1", "/panic"} {
			resp, err := http.Get("http://" + httpAddr + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got[path] = resp.StatusCode
		}
		_ = p.Signal(syscall.SIGTERM)
		if code := exitCode(t, p); code != 0 {
			t.Errorf("exit %d after SIGTERM, want 0: the failing entrypoint ran", code)
		}
		return got
	}
	if got := routes(user, "EXAMPLE_FAIL_AFTER=1ms"); got["/burn?n=1"] != http.StatusNotFound || got["/panic"] != http.StatusNotFound {
		t.Errorf("the user's build answers the test routes %v, want 404 for both", got)
	}
	if got := routes(bin); got["/burn?n=1"] != http.StatusOK || got["/panic"] != http.StatusInternalServerError {
		t.Errorf("the e2e build answers the test routes %v, want 200 and 500", got)
	}
}
