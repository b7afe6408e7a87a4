"""Shared by the tree checks of `make lint` (tools/check-*.py): how they end."""
import sys


def finish(tool, errors, what, ok):
    """Prints each error (`file:line: ...`), then either `<tool>: N <what>` on stderr and 1,
    or `<tool>: ok<ok>` and 0: the script's exit status."""
    for e in errors:
        print(e)
    if errors:
        print(f"{tool}: {len(errors)} {what}", file=sys.stderr)
        return 1
    print(f"{tool}: ok{ok}")
    return 0
