"""Reports: tables, layouts and plots of runs' results. Importing the package registers
every layout."""

from execbench.reports import (  # noqa: F401
    ces,
    codesense,
    dexbench,
    generalization,
    leaderboard,
    overview,
    vetting,
)
