// Package budget limits what a refinement loop may spend: iterations,
// tokens, cost and wall time.
//
// A [Budget] is checked and reserved before an iteration or a task (an
// estimate), and settled after it (the actual usage). Each resource has a hard
// limit or is warn-only. [ContextWindow] tells when a prompt nears the limit
// of a model's context window, and [EstimateTokens] estimates the tokens of a
// text.
package budget

import (
	"errors"
	"time"
)

// Resource names one limited resource. Resources are bit flags so that a set
// of them fits in one value (see [Limits.WarnOnly]).
type Resource uint8

// The limited resources.
const (
	Iterations Resource = 1 << iota
	Tokens
	Cost
	Wall
)

// String returns "iterations", "tokens", "cost", "wall", or the names of a set
// joined by "+".
func (r Resource) String() string { panic("unimplemented") }

// Usage is an amount of the resources: spent, reserved, estimated or left.
type Usage struct {
	Iterations int           `json:"iterations,omitempty"`
	Tokens     int64         `json:"tokens,omitempty"`
	Cost       float64       `json:"cost,omitempty"`
	Wall       time.Duration `json:"wall,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage { panic("unimplemented") }

// Sub returns u - v.
func (u Usage) Sub(v Usage) Usage { panic("unimplemented") }

// IsZero reports whether u is all zero.
func (u Usage) IsZero() bool { panic("unimplemented") }

// Limits are the bounds of a budget. A zero field means "no limit" for that
// resource. Limits is a plain value: copy it freely.
type Limits struct {
	Iterations int           `json:"iterations,omitempty"`
	Tokens     int64         `json:"tokens,omitempty"`
	Cost       float64       `json:"cost,omitempty"`
	Wall       time.Duration `json:"wall,omitempty"`
	// WarnOnly lists the resources whose limit only warns: exceeding it is
	// reported as a warning and spending goes on.
	WarnOnly Resource `json:"warn_only,omitempty"`
	// WarnAt is the share of a limit, in (0, 1], from which a check warns
	// that the resource runs low; 0 means 0.8.
	WarnAt float64 `json:"warn_at,omitempty"`
}

// Validate reports a *LimitError when a limit is negative, WarnAt is outside
// [0, 1] or WarnOnly names an unknown resource.
func (l Limits) Validate() error { panic("unimplemented") }

// Warning says that a resource runs low or, for a warn-only resource, that
// its limit is exceeded.
type Warning struct {
	Resource Resource
	// Used is what is spent and reserved including the estimate; Limit the bound.
	Used, Limit float64
	// Exceeded is true when Used is over Limit (only for warn-only
	// resources; for others the resource is a blocker).
	Exceeded bool
}

// String returns e.g. "tokens at 85% of limit (85000/100000)".
func (w Warning) String() string { panic("unimplemented") }

// Check is the answer to "can this estimate be afforded?".
type Check struct {
	// OK is true when no hard limit would be exceeded.
	OK bool
	// Blockers lists the resources whose hard limit the estimate would exceed.
	Blockers []Resource
	// Warnings lists the resources running low or over a warn-only limit.
	Warnings []Warning
}

// ErrExceeded is matched (with errors.Is) by every *ExceededError.
var ErrExceeded = errors.New("budget exceeded")

// ExceededError reports that a reservation would exceed a hard limit.
type ExceededError struct {
	Resource Resource
	// Limit, Used (spent plus reserved) and Requested are in the resource's
	// unit: count, tokens, cost, or nanoseconds for Wall.
	Limit, Used, Requested float64
}

func (e *ExceededError) Error() string { panic("unimplemented") }

// Is reports whether target is ErrExceeded.
func (e *ExceededError) Is(target error) bool { return target == ErrExceeded }

// ErrInvalidLimits is matched by every *LimitError.
var ErrInvalidLimits = errors.New("budget: invalid limits")

// LimitError reports an invalid field of [Limits].
type LimitError struct {
	Field  string
	Reason string
}

func (e *LimitError) Error() string { panic("unimplemented") }

// Is reports whether target is ErrInvalidLimits.
func (e *LimitError) Is(target error) bool { return target == ErrInvalidLimits }

// Budget tracks spending against [Limits]. The zero value is a budget with no
// limits. A Budget is safe for concurrent use, so parallel tasks may reserve
// and settle against one budget.
type Budget struct {
	// unexported fields: mutex, limits, spent, reserved
}

// New returns a budget with the given limits, or a *LimitError.
func New(l Limits) (*Budget, error) { panic("unimplemented") }

// Limits returns the budget's limits.
func (b *Budget) Limits() Limits { panic("unimplemented") }

// Check reports whether est can be afforded on top of what is spent and
// reserved, without reserving it.
func (b *Budget) Check(est Usage) Check { panic("unimplemented") }

// Reserve sets est aside, or returns an *ExceededError (and reserves nothing)
// when a hard limit would be exceeded. Warnings are returned either way.
// The reservation must be settled or released.
func (b *Budget) Reserve(est Usage) (*Reservation, []Warning, error) { panic("unimplemented") }

// Charge adds actual usage that was not reserved.
func (b *Budget) Charge(u Usage) { panic("unimplemented") }

// Spent returns what has been settled or charged.
func (b *Budget) Spent() Usage { panic("unimplemented") }

// Reserved returns what is reserved and not yet settled.
func (b *Budget) Reserved() Usage { panic("unimplemented") }

// Remaining returns what is left under each limit, after spent and reserved
// usage; a resource without a limit reports -1 (Wall: -1ns). Never below 0.
func (b *Budget) Remaining() Usage { panic("unimplemented") }

// Exhausted returns the resources whose hard limit is reached by what is
// spent alone (nothing more can be afforded), or 0.
func (b *Budget) Exhausted() Resource { panic("unimplemented") }

// Restore sets the spent usage, e.g. from a checkpoint; reservations are
// dropped.
func (b *Budget) Restore(spent Usage) { panic("unimplemented") }

// Reservation is usage set aside by [Budget.Reserve]. Settle or Release it
// exactly once; later calls do nothing. Safe for concurrent use.
type Reservation struct{}

// Settle replaces the reserved estimate with the actual usage.
func (r *Reservation) Settle(actual Usage) { panic("unimplemented") }

// Release returns the reserved estimate unspent.
func (r *Reservation) Release() { panic("unimplemented") }

// ContextWindow describes a model's context window and the share of it at
// which work should checkpoint and continue in a fresh iteration.
type ContextWindow struct {
	// Size in tokens; 0 means unknown (never exhausted).
	Size int64
	// Threshold in (0, 1]; 0 means 0.90.
	Threshold float64
}

// Usage returns tokens as a share of Size (0 when Size is 0).
func (w ContextWindow) Usage(tokens int64) float64 { panic("unimplemented") }

// Exhausted reports whether tokens reach the threshold share of the window.
func (w ContextWindow) Exhausted(tokens int64) bool { panic("unimplemented") }

// EstimateTokens estimates the tokens of text: about one per four bytes, at
// least one per word, and 0 for the empty string.
func EstimateTokens(text string) int { panic("unimplemented") }
