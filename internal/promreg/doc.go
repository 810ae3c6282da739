// Package promreg is the one way syncpod components register their
// Prometheus metrics.
//
// Every component that has metrics keeps them in a struct of collectors
// built by one constructor, newMetrics or NewMetrics(reg
// prometheus.Registerer, ...), which takes the registry main created (one
// per binary, never a global), pre-creates the label values a dashboard
// expects to see at zero, reads live state through GaugeFuncs given the
// readers it needs as arguments, and ends with Register. Metric names
// never change with the wiring: tests and dashboards read them.
package promreg
