package kafkaentry_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

// Stop after a drain cuts the partition readers' fetch in progress rather than wait
// for it: kafka-go's Reader.Close waits up to MaxWait for it, and the Host's exit
// waited with it. Everything handled is committed by then, so nothing is lost.
func TestStopCutsTheFetchInProgress(t *testing.T) {
	topic := newTopic(t, 2)
	produce(t, topic, values("m", 20)...)
	col := newCollector()
	cfg := config(t, topic)
	// An idle fetch waits this long on the broker. It is long so that the bound below,
	// half of it, is a sanity bound (Stop itself takes milliseconds) that a loaded
	// machine cannot reach, while a Stop that waits for the fetch still fails it.
	cfg.MaxWait = 30 * time.Second
	core, logs := observer.New(zap.WarnLevel)
	c, err := kafkaentry.New(cfg, col.handle, kafkaentry.WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core)}))
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	col.waitCount(t, 20)

	close(r.stop)
	if err := <-r.served; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > cfg.MaxWait/2 {
		t.Errorf("Stop took %s: it waited for the readers' fetch (MaxWait %s)", took, cfg.MaxWait)
	}
	if got, want := committed(t, cfg.GroupID, topic, 2), endOffsets(t, topic, 2); !maps.Equal(got, want) {
		t.Errorf("committed offsets %v, want the end offsets %v", got, want)
	}
	// The readers report the connections Stop cut; that is the exit working, and it
	// must not reach the log as a warning on every graceful stop.
	if n := logs.FilterMessageSnippet("use of closed network connection").Len(); n != 0 {
		t.Errorf("%d warnings about the cut connections: %v", n, logs.FilterMessageSnippet("use of closed").All())
	}
}
