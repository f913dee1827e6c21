// Package fleet declares a service's deployment posture and the marks its units carry,
// so that mistakes only N replicas can make — twenty replicas running one migration at
// once, a leadership campaign in a process that is frozen between requests — are
// refused when the service is built instead of discovered in production.
//
// Under Fleet, a unit marked MutatesSharedState must also be SingletonGuarded; under
// Serverless, a unit marked RequiresLongRunning is refused. The Host applies Profile.Check
// to every warmup step, hook and entrypoint registration and reports each violation,
// naming the unit, in one ConfigError. The marks are declared by the unit's author:
// mutation cannot be detected, so the check is honest by declaration.
//
// The package is a vocabulary and imports nothing of the module's: the guards that
// earn SingletonGuarded live beside leadership, in package leader (NewSingleton for a
// start step, a Leadership for work that runs for the life of the process).
package fleet
