"""Execution simulation with coherence and consistency (the CES paper): the ``simulation``
task (``simulation``) and its parts: what is asked (``sites``, ``annotate``), the worked
examples (``examples``), reading answers (``answers``), the coherence rules and divergence
point (``rules``), prime-path coverage and consistency (``coverage``), the numbers a run
reports (``summary``, typed in ``summary_payload``, which the reports read back)."""
