package freshclone

import (
	"bufio"
	"bytes"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/internal/proctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readmeCurls returns the curl lines of the README's "try" block.
func readmeCurls(t *testing.T, readme []byte) []string {
	t.Helper()
	var out []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "While `make run` is up"):
			in = true
		case in && strings.HasPrefix(line, "```") && len(out) > 0:
			return out
		case in && strings.HasPrefix(line, "curl "):
			if i := strings.Index(line, " #"); i > 0 {
				line = line[:i]
			}
			out = append(out, strings.TrimSpace(line))
		}
	}
	t.Fatal("no curl lines found in the README's `make run` block")
	return nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestFreshClone(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is missing")
		}
		t.Skip("curl is missing")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clone := filepath.Join(dir, "servicewright")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "example")
	build := exec.Command("go", "build", "-o", bin, "./cmd/example")
	build.Dir = clone
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build in a fresh clone: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	curls := readmeCurls(t, readme)

	httpAddr, probeAddr := freeAddr(t), freeAddr(t)
	began := time.Now()
	p := proctest.Start(t, bin, "HTTP_ADDR="+httpAddr, "PROBE_ADDR="+probeAddr, "GRPC_ADDR=127.0.0.1:0", "KAFKA_BROKERS=", "REDIS_URL=", "DATABASE_URL=")
	if _, err := p.WaitLog(map[string]string{"msg": "service ready"}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("ready %s after exec, with no external service", time.Since(began).Round(time.Millisecond))

	ports := regexp.MustCompile(`localhost:(8080|8079)`)
	for _, line := range curls {
		cmdline := ports.ReplaceAllStringFunc(line, func(m string) string {
			if strings.HasSuffix(m, "8080") {
				return httpAddr
			}
			return probeAddr
		})
		flags := "--max-time 5 -o /dev/null -w '%{http_code}' "
		if strings.Contains(cmdline, "/events") { // a stream: read for a moment, then hang up
			flags = "--max-time 0.5 -o /dev/null -w '%{http_code}' "
		}
		if strings.Contains(cmdline, "|") { // a pipeline: it must succeed as written
			if out, err := exec.Command("bash", "-o", "pipefail", "-c", cmdline).CombinedOutput(); err != nil || len(out) == 0 {
				t.Errorf("%s: %v\n%s", line, err, out)
			}
			continue
		}
		out, _ := exec.Command("bash", "-c", strings.Replace(cmdline, "curl ", "curl "+flags, 1)).Output()
		if code := strings.TrimSpace(string(out)); !strings.HasPrefix(code, "2") {
			t.Errorf("%s: status %q", line, code)
		}
	}

	_ = p.Signal(syscall.SIGTERM)
	code, err := p.Wait(20 * time.Second)
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if p.Find(map[string]string{"msg": "shutdown report", "result": "success"}) == nil {
		t.Error("no successful shutdown report")
	}
}
