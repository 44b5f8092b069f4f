"""``OutputBudget``: the bound counts UTF-8 bytes, cuts at a character boundary, and never fails on child text."""

from __future__ import annotations

from host._output_budget import OutputBudget


def test_text_within_the_bound_is_kept_whole() -> None:
    budget = OutputBudget(6)
    assert budget.admit("abc") == "abc"
    assert budget.admit("def") == "def"
    assert not budget.exceeded


def test_the_crossing_text_is_cut_at_a_character_boundary_and_nothing_follows() -> None:
    budget = OutputBudget(5)
    assert budget.admit("éé\u00e9") == "éé"  # 2 bytes each: the third would need bytes 5 and 6
    assert budget.exceeded
    assert budget.admit("more") == ""


def test_a_lone_surrogate_counts_as_three_bytes_instead_of_failing() -> None:
    budget = OutputBudget(4)
    assert budget.admit("a\ud800") == "a\ud800"
    assert budget.admit("\ud800") == ""
    assert budget.exceeded
