package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint/cronentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/leader"
)

// cronModule schedules the "report" job every EXAMPLE_CRON_EVERY. With REDIS_URL set
// each tick runs on exactly one replica of the fleet; alone, on this one.
func cronModule(k knobs) fx.Option {
	return host.Provide(func(lock leader.Lock, inst host.Instance, log *zap.Logger, reg prometheus.Registerer) (*cronentry.Scheduler, error) {
		job := cronentry.Job{
			Name:   "report",
			Every:  k.cronEvery,
			Jitter: k.cronEvery / 10,
			Run: func(ctx context.Context, tick cronentry.Tick) error {
				log.Info("report", zap.Time("tick", tick.Scheduled), zap.Uint64("token", tick.Token))
				return nil
			},
		}
		if k.redisURL != "" {
			job.OncePerFleet = cronentry.OncePerFleet(lock, string(inst), k.cronEvery)
		}
		return cronentry.New("cron", []cronentry.Job{job}, cronentry.WithLogger(log), cronentry.WithRegisterer(reg))
	}, 40)
}
