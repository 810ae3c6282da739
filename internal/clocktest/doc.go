// Package clocktest holds the manual clock the tests of time-keeping
// packages inject: it tells one instant until a test moves it, so what a
// store or runner decides from "now" is the same on every run.
//
// It satisfies every clock interface of the form
//
//	interface{ Now() time.Time }
//
// (the executor's backoff.Clock, and the planner store's Now func via the
// method value c.Now), and is safe for concurrent use.
package clocktest
