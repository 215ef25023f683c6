"""The console script's first module: answers ``--version`` before anything is imported.

``padformer-edge --version`` is what people and install scripts run to check a line PC;
it needs the installed version and nothing else, so it is answered here without loading
the command tree (typer, rich, SQLAlchemy, Alembic). Everything else goes to
``padformer_edge.cli.app.main``.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable


def main() -> None:
    """Console-script entry point."""
    # OpenCV prints its own "[ WARN:0@...]" lines to stderr, outside any log; the
    # commands report unreadable images themselves, so only its errors are let through.
    # Set before cv2 can be imported; an operator's own OPENCV_LOG_LEVEL wins.
    os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
    if sys.argv[1:] == ["--version"]:
        from padformer_edge import __version__

        print(f"padformer-edge {__version__}")
        return
    try:
        run_app = _load_command_tree()
    except KeyboardInterrupt:  # Ctrl-C while the command tree loads: no traceback
        print("interrupted (Ctrl-C) while starting.", file=sys.stderr)
        sys.exit(130)
    run_app()


def _load_command_tree() -> Callable[[], None]:
    """Import the command tree with the cyclic collector paused, then freeze what it made.

    The tree's modules (SQLAlchemy, pydantic, typer, the store's tables) are hundreds of
    thousands of objects that live until the process ends: collecting them while they
    load finds nothing to free, and every later full collection, the one at exit
    included, would walk them again. Frozen, they are left out of all collections; a
    command that refuses at once (a daemon on a held line) spends about a quarter less
    CPU, and a daemon's full collections over months skip them."""
    gc.disable()
    try:
        from padformer_edge.cli.app import main as run_app
    finally:
        gc.freeze()
        gc.enable()
    return run_app
