package budget_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/refine-go/refine/budget"
)

func ExampleBudget_Reserve() {
	b, err := budget.New(budget.Limits{Iterations: 3, Tokens: 50000})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 1; ; i++ {
		r, warnings, err := b.Reserve(budget.Usage{Iterations: 1, Tokens: 8000})
		if errors.Is(err, budget.ErrExceeded) {
			fmt.Println("stop:", err)
			break
		}
		for _, w := range warnings {
			fmt.Println("warning:", w)
		}
		// ... run the iteration, measure what it used ...
		r.Settle(budget.Usage{Iterations: 1, Tokens: 12500, Wall: 40 * time.Second})
		fmt.Printf("iteration %d: spent %d tokens\n", i, b.Spent().Tokens)
	}
	fmt.Println("exhausted:", b.Exhausted())
	// Output:
	// iteration 1: spent 12500 tokens
	// iteration 2: spent 25000 tokens
	// warning: iterations at 100% of limit (3/3)
	// iteration 3: spent 37500 tokens
	// stop: budget exceeded: iterations: used 3 + requested 1 > limit 3
	// exhausted: iterations
}

// External calls are a resource like tokens: reserve one before each API,
// tool or search call, settle it once the call is made. Here a task may make
// at most three search calls.
func ExampleBudget_Reserve_calls() {
	calls, err := budget.New(budget.Limits{Calls: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, query := range []string{"oauth", "jwt", "pkce", "saml"} {
		r, _, err := calls.Reserve(budget.Usage{Calls: 1})
		if err != nil {
			fmt.Println("skip", query+":", err)
			continue
		}
		// ... make the call ...
		r.Settle(budget.Usage{Calls: 1})
		fmt.Printf("searched %s (calls left: %d)\n", query, calls.Remaining().Calls)
	}
	fmt.Println("exhausted:", calls.Exhausted())
	// Output:
	// searched oauth (calls left: 2)
	// searched jwt (calls left: 1)
	// searched pkce (calls left: 0)
	// skip saml: budget exceeded: calls: used 3 + requested 1 > limit 3
	// exhausted: calls
}

// A prompt over a warn-only token budget is reported and run anyway.
func ExampleBudget_Check() {
	b, err := budget.New(budget.Limits{Tokens: 4000, WarnOnly: budget.Tokens})
	if err != nil {
		fmt.Println(err)
		return
	}
	blocked, warnings := b.Check(budget.Usage{Tokens: 4230})
	fmt.Println("ok:", blocked == 0)
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// ok: true
	// warning: tokens over limit at 106% with the next estimate (0 spent + 4230 estimated / 4000)
}

func ExampleEstimateTokens() {
	prompt := "Refine the draft until every requirement is met."
	n := budget.EstimateTokens(prompt)
	fmt.Printf("Token count: %d / %d budget\n", n, 100000)
	fmt.Println(budget.EstimateTokens("a b c d e f"), budget.EstimateTokens(""))
	// Output:
	// Token count: 12 / 100000 budget
	// 6 0
}

func ExampleContextWindow() {
	w := budget.ContextWindow{Size: 200000} // threshold 90%
	for _, done := range []int{5, 12} {
		left := 14
		tokens := budget.EstimateContext(done, left, 0, 0) // 8k per done, 6k per left
		fmt.Printf("%d done, %d left: %d tokens, %.1f%%, checkpoint: %v\n",
			done, left, tokens, 100*w.Usage(tokens), w.Exhausted(tokens))
	}
	// Output:
	// 5 done, 14 left: 124000 tokens, 62.0%, checkpoint: false
	// 12 done, 14 left: 180000 tokens, 90.0%, checkpoint: true
}
