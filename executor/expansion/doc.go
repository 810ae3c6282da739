// Package expansion expands the $(VAR) references Kubernetes allows in a
// container's command, args and env values, with the kubelet's rules:
// "$$" is a literal "$" (so "$$(VAR)" stays "$(VAR)" unexpanded), a
// reference to an undefined variable is left as written, and a "$" that
// starts no reference ("$VAR", a trailing "$", an unclosed "$(") is
// literal. It is pure: no I/O, no globals.
package expansion
