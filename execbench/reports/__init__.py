"""Reports: tables, layouts and plots of runs' results. Importing the package registers
every layout."""

from execbench.reports import (  # noqa: F401
    ces,
    ces_overlap,
    codesense,
    compare,
    cross_vetting,
    dates,
    dexbench,
    errors,
    generalization,
    leaderboard,
    overview,
    vetting,
)
