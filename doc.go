// Package refine is the root of a module for bounded, resumable, adaptive
// refinement loops.
package refine
