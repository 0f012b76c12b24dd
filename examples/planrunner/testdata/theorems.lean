import Mathlib

-- A sorry in a comment is not a placeholder.

theorem add_zero' (n : Nat) : n + 0 = n := by
  sorry

theorem zero_add' (n : Nat) : 0 + n = n := by
  sorry

theorem trivial_true : True := by
  sorry
