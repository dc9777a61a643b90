"""Program mutation: single-site operators on source text (``operators``) and the search
that runs the mutants to choose one per (program, call) (``search``)."""

from execbench.mutation.operators import Mutant, mutants
from execbench.mutation.search import (
    choose_mutant,
    mutant_budget,
    mutant_for,
    mutation_call,
    mutation_calls,
)

__all__ = ["Mutant", "choose_mutant", "mutant_budget", "mutant_for", "mutation_call",
           "mutation_calls", "mutants"]
