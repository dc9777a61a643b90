"""Reports: tables, layouts and plots of runs' results. Importing the package registers
every layout."""

from execbench.report import ces, dexbench, generalization, leaderboard, overview  # noqa: F401
