"""Reports: tables, layouts and plots of runs' results. Importing the package registers
every layout."""

from execbench.report import (  # noqa: F401
    ces,
    codesense,
    dexbench,
    generalization,
    leaderboard,
    overview,
    vetting,
)
