package budget

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
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
	// Calls counts external calls (API, tool or search calls), on which
	// agents are commonly rate-limited.
	Calls
)

// allResources is the set of known resources.
const allResources = Iterations | Tokens | Cost | Wall | Calls

// resources lists the known resources in the order checks report them.
var resources = [...]Resource{Iterations, Tokens, Cost, Wall, Calls}

// String returns "iterations", "tokens", "cost", "wall", "calls", or the names
// of a set joined by "+". The empty set is "none"; unknown bits are shown in
// hex, e.g. "tokens+0x20".
func (r Resource) String() string {
	switch r {
	case 0:
		return "none"
	case Iterations:
		return "iterations"
	case Tokens:
		return "tokens"
	case Cost:
		return "cost"
	case Wall:
		return "wall"
	case Calls:
		return "calls"
	}
	var sb strings.Builder
	for _, one := range resources {
		if r&one == 0 {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('+')
		}
		sb.WriteString(one.String())
	}
	if unknown := r &^ allResources; unknown != 0 {
		if sb.Len() > 0 {
			sb.WriteByte('+')
		}
		sb.WriteString("0x")
		sb.WriteString(strconv.FormatUint(uint64(unknown), 16))
	}
	return sb.String()
}

// Usage is an amount of the resources: spent, reserved, estimated or left.
// Calls is a count of external calls (API, tool or search calls).
// InputTokens and OutputTokens split Tokens when the caller knows how many
// were read and how many written (a model's report of a call): they are
// parts of Tokens and counted in it, never in addition to it, and no limit
// applies to them on their own. CacheReadTokens and CacheWriteTokens are in
// turn the parts of InputTokens read from and written to the provider's
// prompt cache (Anthropic's cache_read_input_tokens and
// cache_creation_input_tokens, OpenAI's cached_tokens), which providers
// price apart: [Prices] turns a usage into its cost.
//
// An amount given to a [Budget] (an estimate, an actual usage, a restored
// spending) is valid when no field is negative and Cost is finite; see
// [Usage.Validate].
type Usage struct {
	Iterations int           `json:"iterations,omitempty"`
	Tokens     int64         `json:"tokens,omitempty"`
	Cost       float64       `json:"cost,omitempty"`
	Wall       time.Duration `json:"wall,omitempty"`
	Calls      int64         `json:"calls,omitempty"`
	// InputTokens are the tokens of Tokens that were input (prompt, context).
	InputTokens int64 `json:"input_tokens,omitempty"`
	// OutputTokens are the tokens of Tokens that were output (the reply).
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// CacheReadTokens and CacheWriteTokens are the tokens of InputTokens
	// read from and written to a prompt cache.
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns u + v. It is plain arithmetic: it does not check for overflow.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Iterations: u.Iterations + v.Iterations,
		Tokens:     u.Tokens + v.Tokens,
		Cost:       u.Cost + v.Cost,
		Wall:       u.Wall + v.Wall,
		Calls:      u.Calls + v.Calls,

		InputTokens:  u.InputTokens + v.InputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens,

		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

// Sub returns u - v. It is plain arithmetic: fields may become negative.
func (u Usage) Sub(v Usage) Usage {
	return Usage{
		Iterations: u.Iterations - v.Iterations,
		Tokens:     u.Tokens - v.Tokens,
		Cost:       u.Cost - v.Cost,
		Wall:       u.Wall - v.Wall,
		Calls:      u.Calls - v.Calls,

		InputTokens:  u.InputTokens - v.InputTokens,
		OutputTokens: u.OutputTokens - v.OutputTokens,

		CacheReadTokens:  u.CacheReadTokens - v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens - v.CacheWriteTokens,
	}
}

// IsZero reports whether u is all zero.
func (u Usage) IsZero() bool {
	return u.Iterations == 0 && u.Tokens == 0 && u.Cost == 0 && u.Wall == 0 && u.Calls == 0 &&
		u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadTokens == 0 && u.CacheWriteTokens == 0
}

// Validate returns an error matching [ErrInvalidUsage], naming the field,
// when a field of u is negative or Cost is NaN or infinite. [Budget.Reserve]
// rejects such an estimate.
func (u Usage) Validate() error {
	switch {
	case u.Iterations < 0:
		return invalidUsage("Iterations", "negative ("+strconv.Itoa(u.Iterations)+")")
	case u.Tokens < 0:
		return invalidUsage("Tokens", "negative ("+strconv.FormatInt(u.Tokens, 10)+")")
	case math.IsNaN(u.Cost) || math.IsInf(u.Cost, 0):
		return invalidUsage("Cost", "not finite ("+formatFloat(u.Cost)+")")
	case u.Cost < 0:
		return invalidUsage("Cost", "negative ("+formatFloat(u.Cost)+")")
	case u.Wall < 0:
		return invalidUsage("Wall", "negative ("+u.Wall.String()+")")
	case u.Calls < 0:
		return invalidUsage("Calls", "negative ("+strconv.FormatInt(u.Calls, 10)+")")
	case u.InputTokens < 0:
		return invalidUsage("InputTokens", "negative ("+strconv.FormatInt(u.InputTokens, 10)+")")
	case u.OutputTokens < 0:
		return invalidUsage("OutputTokens", "negative ("+strconv.FormatInt(u.OutputTokens, 10)+")")
	case u.CacheReadTokens < 0:
		return invalidUsage("CacheReadTokens", "negative ("+strconv.FormatInt(u.CacheReadTokens, 10)+")")
	case u.CacheWriteTokens < 0:
		return invalidUsage("CacheWriteTokens", "negative ("+strconv.FormatInt(u.CacheWriteTokens, 10)+")")
	}
	return nil
}

// clamp returns u with negative fields and a NaN cost set to 0, and an
// infinite cost set to the largest finite float.
func (u Usage) clamp() Usage {
	u.Iterations = max(u.Iterations, 0)
	u.Tokens = max(u.Tokens, 0)
	switch {
	case math.IsNaN(u.Cost) || u.Cost < 0:
		u.Cost = 0
	case math.IsInf(u.Cost, 1):
		u.Cost = math.MaxFloat64
	}
	u.Wall = max(u.Wall, 0)
	u.Calls = max(u.Calls, 0)
	u.InputTokens = max(u.InputTokens, 0)
	u.OutputTokens = max(u.OutputTokens, 0)
	u.CacheReadTokens = max(u.CacheReadTokens, 0)
	u.CacheWriteTokens = max(u.CacheWriteTokens, 0)
	return u
}

// addSat returns u + v for non-negative u and v, saturating at the largest
// value of each integer field instead of overflowing.
func (u Usage) addSat(v Usage) Usage {
	return Usage{
		Iterations: int(satAdd(int64(u.Iterations), int64(v.Iterations), math.MaxInt)),
		Tokens:     satAdd(u.Tokens, v.Tokens, math.MaxInt64),
		Cost:       u.Cost + v.Cost,
		Wall:       time.Duration(satAdd(int64(u.Wall), int64(v.Wall), math.MaxInt64)),
		Calls:      satAdd(u.Calls, v.Calls, math.MaxInt64),

		InputTokens:  satAdd(u.InputTokens, v.InputTokens, math.MaxInt64),
		OutputTokens: satAdd(u.OutputTokens, v.OutputTokens, math.MaxInt64),

		CacheReadTokens:  satAdd(u.CacheReadTokens, v.CacheReadTokens, math.MaxInt64),
		CacheWriteTokens: satAdd(u.CacheWriteTokens, v.CacheWriteTokens, math.MaxInt64),
	}
}

// satAdd returns a + b for non-negative a and b, or ceil when the sum is over
// it.
func satAdd(a, b, ceil int64) int64 {
	if a > ceil-b {
		return ceil
	}
	return a + b
}

// defaultWarnAt is the share of a limit from which checks warn when
// [Limits.WarnAt] is 0.
const defaultWarnAt = 0.8

// Limits are the bounds of a budget. A zero field means "no limit" for that
// resource. Limits is a plain value: copy it freely.
type Limits struct {
	Iterations int           `json:"iterations,omitempty"`
	Tokens     int64         `json:"tokens,omitempty"`
	Cost       float64       `json:"cost,omitempty"`
	Wall       time.Duration `json:"wall,omitempty"`
	// Calls bounds the external calls (API, tool or search calls).
	Calls int64 `json:"calls,omitempty"`
	// WarnOnly lists the resources whose limit only warns: exceeding it is
	// reported as a warning and spending goes on.
	WarnOnly Resource `json:"warn_only,omitempty"`
	// WarnAt is the share of a limit, in (0, 1], from which a check warns
	// that the resource runs low; 0 means 0.8.
	WarnAt float64 `json:"warn_at,omitempty"`
}

// Validate returns an error matching [ErrInvalidLimits] when a limit is
// negative, Cost is NaN or infinite, WarnAt is NaN or outside [0, 1] or
// WarnOnly names an unknown resource. It checks the fields in their
// declaration order and reports the first invalid one by name, e.g.
// "budget: invalid limits: Tokens: negative (-5)".
func (l Limits) Validate() error {
	switch {
	case l.Iterations < 0:
		return invalidLimits("Iterations", "negative ("+strconv.Itoa(l.Iterations)+")")
	case l.Tokens < 0:
		return invalidLimits("Tokens", "negative ("+strconv.FormatInt(l.Tokens, 10)+")")
	case math.IsNaN(l.Cost) || math.IsInf(l.Cost, 0):
		return invalidLimits("Cost", "not finite ("+formatFloat(l.Cost)+")")
	case l.Cost < 0:
		return invalidLimits("Cost", "negative ("+formatFloat(l.Cost)+")")
	case l.Wall < 0:
		return invalidLimits("Wall", "negative ("+l.Wall.String()+")")
	case l.Calls < 0:
		return invalidLimits("Calls", "negative ("+strconv.FormatInt(l.Calls, 10)+")")
	case l.WarnOnly&^allResources != 0:
		return invalidLimits("WarnOnly", "unknown resource ("+l.WarnOnly.String()+")")
	case math.IsNaN(l.WarnAt) || l.WarnAt < 0 || l.WarnAt > 1:
		return invalidLimits("WarnAt", "outside [0, 1] ("+formatFloat(l.WarnAt)+")")
	}
	return nil
}

// warnAt returns WarnAt or its default.
func (l Limits) warnAt() float64 {
	if l.WarnAt == 0 {
		return defaultWarnAt
	}
	return l.WarnAt
}

// Warning says that a resource runs low or, for a warn-only resource, that
// its limit is exceeded.
type Warning struct {
	Resource Resource
	// Used is what is spent and reserved including the estimate; Limit the
	// bound. Both are in the resource's unit: count (iterations or calls),
	// tokens, cost, or nanoseconds for Wall.
	Used, Limit float64
	// Estimate is the part of Used that is the estimate being reserved:
	// Used - Estimate is what is spent and reserved before it.
	Estimate float64
	// Exceeded is true when Used is over Limit (only for warn-only
	// resources; for others the resource is a blocker).
	Exceeded bool
}

// String returns e.g. "tokens at 85% of limit (85000/100000)", or for an
// exceeded warn-only limit "tokens over limit at 120% (120000/100000)". Wall
// amounts are shown as durations. A warning with an Estimate of a resource
// other than iterations tells it apart from what is spent: "tokens at 87% of
// limit with the next estimate (65 spent + 65 estimated / 150)". (An
// iteration's estimate is the iteration about to run: "iterations at 100%
// of limit (3/3)" warns that the third of three starts.)
func (w Warning) String() string {
	pct := "?"
	if w.Limit > 0 {
		pct = strconv.FormatFloat(math.Round(w.Used/w.Limit*100), 'f', 0, 64)
	}
	amounts := formatAmount(w.Resource, w.Used) + "/" + formatAmount(w.Resource, w.Limit)
	with := ""
	if w.Estimate > 0 && w.Resource != Iterations {
		with = " with the next estimate"
		amounts = formatAmount(w.Resource, w.Used-w.Estimate) + " spent + " + formatAmount(w.Resource, w.Estimate) +
			" estimated / " + formatAmount(w.Resource, w.Limit)
	}
	if w.Exceeded {
		return w.Resource.String() + " over limit at " + pct + "%" + with + " (" + amounts + ")"
	}
	return w.Resource.String() + " at " + pct + "% of limit" + with + " (" + amounts + ")"
}

// formatAmount formats an amount of r in its unit.
func formatAmount(r Resource, v float64) string {
	switch r {
	case Wall:
		if v >= math.MaxInt64 {
			return time.Duration(math.MaxInt64).String()
		}
		return time.Duration(v).String()
	case Cost:
		return formatFloat(v)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// costTolerance is the relative distance to a cost limit within which an
// amount counts as reaching it exactly: sums of costs carry rounding error
// (0.1+0.2 > 0.3).
const costTolerance = 1e-9

// ErrExceeded is matched (with errors.Is) by every *ExceededError.
var ErrExceeded = errors.New("budget exceeded")

// ExceededError reports that a reservation would exceed a hard limit.
type ExceededError struct {
	Resource Resource
	// Limit, Used (spent plus reserved) and Requested are in the resource's
	// unit: count (iterations or calls), tokens, cost, or nanoseconds for
	// Wall.
	Limit, Used, Requested float64
}

// Error returns e.g. "budget exceeded: tokens: used 90000 + requested 20000 >
// limit 100000".
func (e *ExceededError) Error() string {
	return fmt.Sprintf("%v: %v: used %s + requested %s > limit %s", ErrExceeded, e.Resource,
		formatAmount(e.Resource, e.Used), formatAmount(e.Resource, e.Requested), formatAmount(e.Resource, e.Limit))
}

// Is reports whether target is ErrExceeded.
func (e *ExceededError) Is(target error) bool { return target == ErrExceeded }

// ErrInvalidLimits is matched (with errors.Is) by the errors of
// [Limits.Validate], [ContextWindow.Validate] and [New]. Their message names
// the invalid field and what is wrong with it, e.g.
// "budget: invalid limits: Tokens: negative (-5)".
var ErrInvalidLimits = errors.New("budget: invalid limits")

// ErrInvalidUsage is matched (with errors.Is) by the errors of
// [Usage.Validate] and of [Budget.Reserve] for an invalid estimate, e.g.
// "budget: invalid usage: Tokens: negative (-5)".
var ErrInvalidUsage = errors.New("budget: invalid usage")

// invalidLimits returns an error matching ErrInvalidLimits for field.
func invalidLimits(field, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidLimits, field, reason)
}

// invalidUsage returns an error matching ErrInvalidUsage for field.
func invalidUsage(field, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidUsage, field, reason)
}

// Budget tracks spending against [Limits]. The zero value is a budget with no
// limits. A Budget is safe for concurrent use, so parallel tasks may reserve
// and settle against one budget. A Budget must not be copied after first use.
type Budget struct {
	mu       sync.Mutex
	limits   Limits
	spent    Usage
	reserved Usage
	// slots hold the open reservations; a slot with id 0 is free and its
	// index is on free. Ids are never reused, so a settled or dropped
	// Reservation never matches a later one in the same slot.
	slots  []slot
	free   []uint32
	open   int
	nextID uint64
}

type slot struct {
	id  uint64
	est Usage
}

// New returns a budget with the given limits, or an error matching
// [ErrInvalidLimits] (see [Limits.Validate]).
func New(l Limits) (*Budget, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &Budget{limits: l}, nil
}

// Limits returns the budget's limits.
func (b *Budget) Limits() Limits {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limits
}

// Check reports whether est can be afforded on top of what is spent and
// reserved, without reserving it: blocked is the set of resources whose hard
// limit est would exceed (0 when it can be afforded), and warnings lists the
// resources running low or over a warn-only limit, in the order Iterations,
// Tokens, Cost, Wall, Calls, or nil when there is none (Check then does not
// allocate). Check does not validate est: its negative fields and a NaN cost
// count as 0 (see [Budget.Reserve]).
func (b *Budget) Check(est Usage) (blocked Resource, warnings []Warning) {
	var blockers [len(resources)]Resource
	var warns [len(resources)]Warning
	b.mu.Lock()
	nb, nw := b.check(est.clamp(), &blockers, &warns)
	b.mu.Unlock()
	for _, r := range blockers[:nb] {
		blocked |= r
	}
	return blocked, warningsSlice(warns[:nw])
}

// check fills blockers and warnings for est on top of spent and reserved and
// returns how many of each it found. b.mu must be held and est be clamped.
func (b *Budget) check(est Usage, blockers *[len(resources)]Resource, warnings *[len(resources)]Warning) (nb, nw int) {
	l := &b.limits
	if l.Iterations == 0 && l.Tokens == 0 && l.Cost == 0 && l.Wall == 0 && l.Calls == 0 {
		return 0, 0
	}
	warnAt := l.warnAt()
	for _, r := range resources {
		var used, limit, estimate float64
		var over bool
		switch r {
		case Iterations:
			if l.Iterations == 0 {
				continue
			}
			u := satAdd(int64(b.spent.Iterations), int64(b.reserved.Iterations), math.MaxInt64)
			u = satAdd(u, int64(est.Iterations), math.MaxInt64)
			over = u > int64(l.Iterations)
			used, limit, estimate = float64(u), float64(l.Iterations), float64(est.Iterations)
		case Tokens:
			if l.Tokens == 0 {
				continue
			}
			u := satAdd(satAdd(b.spent.Tokens, b.reserved.Tokens, math.MaxInt64), est.Tokens, math.MaxInt64)
			over = u > l.Tokens
			used, limit, estimate = float64(u), float64(l.Tokens), float64(est.Tokens)
		case Cost:
			if l.Cost == 0 {
				continue
			}
			used, limit, estimate = b.spent.Cost+b.reserved.Cost+est.Cost, l.Cost, est.Cost
			over = used-limit > limit*costTolerance
		case Wall:
			if l.Wall == 0 {
				continue
			}
			u := satAdd(satAdd(int64(b.spent.Wall), int64(b.reserved.Wall), math.MaxInt64), int64(est.Wall), math.MaxInt64)
			over = u > int64(l.Wall)
			used, limit, estimate = float64(u), float64(l.Wall), float64(est.Wall)
		case Calls:
			if l.Calls == 0 {
				continue
			}
			u := satAdd(satAdd(b.spent.Calls, b.reserved.Calls, math.MaxInt64), est.Calls, math.MaxInt64)
			over = u > l.Calls
			used, limit, estimate = float64(u), float64(l.Calls), float64(est.Calls)
		}
		warnOnly := l.WarnOnly&r != 0
		switch {
		case over && !warnOnly:
			blockers[nb] = r
			nb++
		case over || used/limit >= warnAt:
			warnings[nw] = Warning{Resource: r, Used: used, Limit: limit, Estimate: estimate, Exceeded: over}
			nw++
		}
	}
	return nb, nw
}

func warningsSlice(s []Warning) []Warning {
	if len(s) == 0 {
		return nil
	}
	return append([]Warning(nil), s...)
}

// Reserve sets est aside, or returns an *ExceededError (and reserves nothing)
// when a hard limit would be exceeded. Warnings are returned either way.
// The reservation must be settled or released.
//
// When several hard limits would be exceeded, the error names the first in
// the order Iterations, Tokens, Cost, Wall, Calls; [Budget.Check] lists them
// all.
// An invalid est (see [Usage.Validate]) is refused with an error matching
// [ErrInvalidUsage]. On an
// error the returned Reservation is the zero Reservation, whose Settle and
// Release do nothing, so `defer r.Release()` is safe either way.
//
// Reserve returns a Reservation value, not a pointer, so that reserving does
// not allocate: the value names a slot inside the Budget, and the slot is
// reused once the reservation is settled or released. Warnings are nil when
// there are none.
func (b *Budget) Reserve(est Usage) (Reservation, []Warning, error) {
	if err := est.Validate(); err != nil {
		return Reservation{}, nil, err
	}
	var blockers [len(resources)]Resource
	var warnings [len(resources)]Warning
	b.mu.Lock()
	nb, nw := b.check(est, &blockers, &warnings)
	if nb > 0 {
		r := blockers[0]
		used := b.spent.addSat(b.reserved)
		b.mu.Unlock()
		e := &ExceededError{Resource: r}
		switch r {
		case Iterations:
			e.Limit, e.Used, e.Requested = float64(b.limits.Iterations), float64(used.Iterations), float64(est.Iterations)
		case Tokens:
			e.Limit, e.Used, e.Requested = float64(b.limits.Tokens), float64(used.Tokens), float64(est.Tokens)
		case Cost:
			e.Limit, e.Used, e.Requested = b.limits.Cost, used.Cost, est.Cost
		case Wall:
			e.Limit, e.Used, e.Requested = float64(b.limits.Wall), float64(used.Wall), float64(est.Wall)
		case Calls:
			e.Limit, e.Used, e.Requested = float64(b.limits.Calls), float64(used.Calls), float64(est.Calls)
		}
		return Reservation{}, warningsSlice(warnings[:nw]), e
	}
	b.reserved = b.reserved.addSat(est)
	b.nextID++
	id := b.nextID
	var i uint32
	if n := len(b.free); n > 0 {
		i = b.free[n-1]
		b.free = b.free[:n-1]
		b.slots[i] = slot{id: id, est: est}
	} else {
		i = uint32(len(b.slots))
		b.slots = append(b.slots, slot{id: id, est: est})
	}
	b.open++
	b.mu.Unlock()
	return Reservation{b: b, slot: i, id: id}, warningsSlice(warnings[:nw]), nil
}

// Charge adds actual usage that was not reserved. Like a settlement it is
// recorded even over a limit; negative fields and a NaN cost count as 0.
func (b *Budget) Charge(u Usage) {
	u = u.clamp()
	b.mu.Lock()
	b.spent = b.spent.addSat(u)
	b.mu.Unlock()
}

// Spent returns what has been settled or charged.
func (b *Budget) Spent() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Reserved returns what is reserved and not yet settled.
func (b *Budget) Reserved() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserved
}

// Remaining returns what is left under each limit, after spent and reserved
// usage; a resource without a limit reports -1 (Wall: -1ns). Never below 0.
func (b *Budget) Remaining() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, used := b.limits, b.spent.addSat(b.reserved)
	rem := Usage{Iterations: -1, Tokens: -1, Cost: -1, Wall: -1, Calls: -1}
	if l.Iterations > 0 {
		rem.Iterations = max(l.Iterations-used.Iterations, 0)
	}
	if l.Tokens > 0 {
		rem.Tokens = max(l.Tokens-used.Tokens, 0)
	}
	if l.Cost > 0 {
		rem.Cost = max(l.Cost-used.Cost, 0)
	}
	if l.Wall > 0 {
		rem.Wall = max(l.Wall-used.Wall, 0)
	}
	if l.Calls > 0 {
		rem.Calls = max(l.Calls-used.Calls, 0)
	}
	return rem
}

// Exhausted returns the resources whose hard limit is reached by what is
// spent alone (nothing more can be afforded), or 0. Warn-only resources are
// never exhausted.
func (b *Budget) Exhausted() Resource {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, s := &b.limits, &b.spent
	var r Resource
	if l.Iterations > 0 && s.Iterations >= l.Iterations {
		r |= Iterations
	}
	if l.Tokens > 0 && s.Tokens >= l.Tokens {
		r |= Tokens
	}
	if l.Cost > 0 && l.Cost-s.Cost <= l.Cost*costTolerance {
		r |= Cost
	}
	if l.Wall > 0 && s.Wall >= l.Wall {
		r |= Wall
	}
	if l.Calls > 0 && s.Calls >= l.Calls {
		r |= Calls
	}
	return r &^ l.WarnOnly
}

// Restore sets the spent usage, e.g. from a checkpoint; reservations are
// dropped. Settling or releasing a dropped reservation later does nothing.
// Negative fields and a NaN cost count as 0.
func (b *Budget) Restore(spent Usage) {
	spent = spent.clamp()
	b.mu.Lock()
	b.spent = spent
	b.reserved = Usage{}
	// Ids are never reused, so a dropped Reservation cannot match a slot
	// filled later.
	clear(b.slots)
	b.slots = b.slots[:0]
	b.free = b.free[:0]
	b.open = 0
	b.mu.Unlock()
}

// close ends the reservation in slot i if it is still the one named id and,
// when settle is true, adds actual (clamped) to the spending. Otherwise it
// does nothing.
func (b *Budget) close(i uint32, id uint64, actual Usage, settle bool) {
	if settle {
		actual = actual.clamp()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if int(i) >= len(b.slots) || b.slots[i].id != id {
		return // already settled, released or dropped
	}
	est := b.slots[i].est
	b.slots[i] = slot{}
	b.free = append(b.free, i)
	b.open--
	if b.open == 0 {
		// Exact, whatever rounding the cost sums carried.
		b.reserved = Usage{}
	} else {
		b.reserved = b.reserved.Sub(est).clamp()
	}
	if settle {
		b.spent = b.spent.addSat(actual)
	}
}

// Reservation is usage set aside by [Budget.Reserve]. Settle or Release it
// exactly once; later calls do nothing. Safe for concurrent use.
//
// A Reservation is a small value naming a slot of its Budget; copies of it
// are the same reservation, so only the first Settle or Release of any copy
// counts. The zero Reservation (returned with an error) reserves nothing, and
// its Settle and Release do nothing.
type Reservation struct {
	b    *Budget
	slot uint32
	id   uint64
}

// Settle replaces the reserved estimate with the actual usage. The actual
// usage is recorded even when it exceeds the estimate or a limit; negative
// fields and a NaN cost count as 0.
func (r Reservation) Settle(actual Usage) {
	if r.b != nil {
		r.b.close(r.slot, r.id, actual, true)
	}
}

// Release returns the reserved estimate unspent.
func (r Reservation) Release() {
	if r.b != nil {
		r.b.close(r.slot, r.id, Usage{}, false)
	}
}
