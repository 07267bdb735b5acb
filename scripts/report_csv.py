"""The CSV reading the report plot scripts share (imported, not run)."""
import csv
import sys


def fail(script, message):
    """One line on stderr, exit 1: the report command says the plots failed."""
    print(f"{script}: {message}", file=sys.stderr)
    sys.exit(1)


def read_rows(script, path, needed, what):
    """The rows of `path`, which must hold the `needed` columns of a zerotrain `what`."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(script, f"{path}: cannot read: {e.strerror}")
    if not rows:
        fail(script, f"{path}: no rows")
    missing = [c for c in needed if c not in rows[0]]
    if missing:
        fail(script, f"{path}: missing columns {', '.join(missing)} (not a zerotrain {what}?)")
    return rows
