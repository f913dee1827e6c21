package main

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint/cronentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/rediskit"
)

type cronParams struct {
	fx.In
	Redis redis.UniversalClient `optional:"true"` // from redisfx.Module when REDIS_URL is set
}

// cronModule schedules the "report" job every EXAMPLE_CRON_EVERY. With REDIS_URL set
// each tick runs on exactly one replica of the fleet; alone, on this one.
func cronModule(k knobs) fx.Option {
	// No telemetry option: the Host hands the Scheduler its logger, registry, tracer
	// provider (a cron.run span per run) and error reporter (failed runs).
	return hostfx.Provide(host.Registration{Order: 40}, func(p cronParams, inst hostfx.Instance, log *zap.Logger) (*cronentry.Scheduler, error) {
		job := cronentry.Job{
			Name:   "report",
			Every:  k.cronEvery,
			Jitter: k.cronEvery / 10,
			Run: func(ctx context.Context, tick cronentry.Tick) error {
				log.Info("report", zap.Time("tick", tick.Scheduled), zap.Uint64("token", tick.Token))
				return nil
			},
		}
		if p.Redis != nil {
			// One lock per tick: OncePerFleet lets each tick's fencing counter expire
			// on its own (rediskit.Lock.AcquireExpiring), with the lock's defaults.
			lk, err := rediskit.NewLock(p.Redis, rediskit.LockConfig{})
			if err != nil {
				return nil, err
			}
			job.OncePerFleet = cronentry.OncePerFleet(lk, string(inst), k.cronEvery)
		}
		return cronentry.New(cronentry.Config{Name: "cron"}, []cronentry.Job{job})
	})
}
