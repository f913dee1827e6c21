package leader

import (
	"go.uber.org/zap"
)

// duplicate reports another process holding the lease under this replica's owner
// id: token is the other holder's, when known (0 otherwise). Owner ids must be
// unique per process; two that are not take the lease from each other, and fencing
// is then the only thing that keeps their writes apart.
func (l *Leadership) duplicate(token uint64, err error) {
	l.m.duplicates.WithLabelValues(l.conf.Key).Inc()
	fields := []zap.Field{zap.String("lock", l.conf.Key), zap.String("duplicate_owner", l.conf.Owner)}
	if token != 0 {
		fields = append(fields, zap.Uint64("their_token", token))
	}
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	l.log.Error("leadership: another process holds the lease with this replica's owner id; give each replica its own (the instance id)", fields...)
}
