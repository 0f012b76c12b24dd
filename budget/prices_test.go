package budget_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/refine-go/refine/budget"
)

// TestPricesCachedTokens: cached input is priced apart from the rest of
// the input, and a usage's parts add and validate like its other fields.
// (Mutations caught: cached tokens priced as input, or counted twice; Add
// or Validate leaving the new fields out.)
func TestPricesCachedTokens(t *testing.T) {
	p := budget.Prices{Input: 3, CacheRead: 0.3, CacheWrite: 3.75, Output: 15}
	u := budget.Usage{Tokens: 1_101_000, InputTokens: 1_100_000, CacheReadTokens: 800_000, CacheWriteTokens: 200_000, OutputTokens: 1_000}
	// 100k uncached at $3, 800k read at $0.30, 200k written at $3.75, 1k out at $15.
	want := 0.3 + 0.24 + 0.75 + 0.015
	if got := p.Cost(u); math.Abs(got-want) > 1e-12 {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	if got := p.Priced(u).Cost; math.Abs(got-want) > 1e-12 {
		t.Errorf("Priced(u).Cost = %v, want %v", got, want)
	}
	if got := p.Cost(budget.Usage{Tokens: 1_000_000}); got != 3 {
		t.Errorf("unsplit tokens cost %v, want them at the input price, 3", got)
	}
	sum := u.Add(u)
	if sum.CacheReadTokens != 1_600_000 || sum.CacheWriteTokens != 400_000 || sum.Sub(u) != u {
		t.Errorf("Add/Sub: %+v", sum)
	}
	if err := (budget.Usage{CacheReadTokens: -1}).Validate(); !errors.Is(err, budget.ErrInvalidUsage) {
		t.Errorf("negative cache reads: %v", err)
	}
	if (budget.Usage{CacheWriteTokens: 1}).IsZero() {
		t.Error("a usage with cache writes is zero")
	}
}

// ExamplePrices charges a cost limit with cached input priced apart.
func ExamplePrices() {
	sonnet := budget.Prices{Input: 3, CacheRead: 0.30, CacheWrite: 3.75, Output: 15} // USD per million tokens
	call := budget.Usage{Tokens: 52_000, InputTokens: 50_000, CacheReadTokens: 45_000, OutputTokens: 2_000}
	fmt.Printf("$%.4f\n", sonnet.Cost(call))
	// Output: $0.0585
}
