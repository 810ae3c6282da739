// Package errgrpc is syncpod's one mapping between errors and gRPC
// statuses, shared by every service (the planner, the executor, the PLEG
// and the CRI simulator).
//
// An error is classified once, where it is made, by wrapping one of the
// class sentinels (ErrNotFound, ErrUnavailable, ...): a package's own
// sentinel is New(ErrNotFound, "pod not found"), a one-off error is
// Errorf(ErrFailedPrecondition, "container %s is not running", name), and
// fmt.Errorf("...: %w", sentinel) keeps the class. Bad wire input is
// fielderr's: ErrInvalidArgument is fielderr.ErrInvalid.
//
// ToGRPC is the one function that turns an error into a status; every
// handler returns what it gives. It promises:
//   - nil stays nil, and an error that already carries a gRPC status
//     (one a peer returned, or one made here) passes through unchanged;
//   - errors of the invalid-argument class become InvalidArgument with a
//     google.rpc.BadRequest detail listing every field path
//     (fielderr.StatusOf);
//   - any other class, and context.Canceled and context.DeadlineExceeded,
//     become their code with the error's own text as the message, so the
//     client reads what it can act on; an error of no class is Internal;
//   - an error of several classes is bad input if any of them is (as
//     fielderr finds field errors anywhere in a chain), else takes the
//     outermost: the class given where the error was wrapped wins over
//     its cause's.
//
// ToGRPCOp does the same with the message prefixed by the RPC's name.
// Relay passes on a status a peer service returned, saying where it came
// from. Class is the way back: the class of an error, or of the status it
// carries.
package errgrpc
