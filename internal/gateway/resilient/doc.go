// Package resilient makes calls to a remote service — a bank — safely:
// per-attempt time-outs, one total budget per operation, retries of the
// safe operations with exponential back-off and full jitter (honouring a
// capped Retry-After), one circuit breaker per service (sony/gobreaker
// v2), and one Call per attempt reported to a Recorder (the gateway_calls
// log).
//
// Two layers:
//   - Caller is the mechanism, and knows nothing of payments: Caller.Do
//     runs one operation (an Op: its name, whether it is safe to repeat,
//     its attempt time-out) given as a function. A payment gateway's
//     operations use it through Gateway; a payout provider, or any other
//     bank client, builds its own Caller (NewCaller, one per service: its
//     own breaker) and runs its own calls through Do.
//   - Gateway wraps a gateway.Gateway driver: each of its operations,
//     and each optional one its driver set in gateway.Ops, runs through
//     the Caller it embeds.
//
// Error contract of Do (and so of every Gateway operation), for a function
// that follows gateway.Gateway's (a *gateway.RejectedError is a definite
// refusal, a *gateway.TransientError an unknown outcome):
//   - a definite answer (nil, or a *gateway.RejectedError) is returned as
//     soon as it arrives, never retried and never replaced by an error;
//   - every other error is a *gateway.TransientError (outcome unknown);
//   - a refusal about one payment (gateway.IsPerPaymentRefusal, Zarinpal
//     -12) is such an error too, but it counts as a success for the
//     breaker (the bank answered) and is not retried within the operation;
//   - when the breaker refuses, the error is a *gateway.TransientError whose
//     Err wraps gateway.ErrUnavailable, so errors.Is(err,
//     gateway.ErrUnavailable) holds and gateway.IsRejected(err) does not. The
//     refused attempt did not reach the service; for an unsafe operation
//     (never retried, such as a gateway's request) that means the service
//     was not called at all by this operation.
package resilient
