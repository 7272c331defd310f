"""The defaults a user meets in every command's help: plain constants that import
nothing, so `mdad --help` need not load the modules that use them."""

DEFAULT_THRESHOLD = 0.8  # the agreement probability that defines MDAD
DEFAULT_SIZES = (10, 25, 50, 100, 250, 500, 1000)
# The reference code's per-subtask sizes: fractions of each subtask's seen pool.
PAPER_FRACTIONS = (0.02, 0.04, 0.08, 0.16, 0.24, 0.32, 0.4)
DEFAULT_TARGETS = 50
DEFAULT_SOURCES = (300,)
ALL_TARGETS = "all"  # n_targets: every model that is not a source
