package leader_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
)

func TestMarks(t *testing.T) {
	l, err := leader.New(leader.Config{Lock: lock.NewMemory(), Key: "digest", Owner: "a"},
		func(context.Context, *leader.Term) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if m := l.Marks(); m != (fleet.Marks{RequiresLongRunning: true}) {
		t.Fatalf("Marks = %+v, want RequiresLongRunning only", m)
	}
	t.Run("the serverless profile refuses a leadership registered with no marks", func(t *testing.T) {
		_, err := host.New(host.AppSpec{
			ServiceName: "orders", Profile: fleet.Serverless,
			Telemetry:   host.TelemetryConfig{Logger: zap.NewNop()},
			Entrypoints: []host.Registration{{Entrypoint: l}},
		}, host.WithEnv(func(string) (string, bool) { return "", false }))
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), `Entrypoints["leadership:digest"]`) {
			t.Fatalf("New = %v, want a ConfigError naming the leadership", err)
		}
	})
	t.Run("the fleet profile accepts it", func(t *testing.T) {
		if why := fleet.Fleet.Check(l.Marks()); why != "" {
			t.Fatal(why)
		}
	})
}
