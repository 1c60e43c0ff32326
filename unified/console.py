"""How wide the tables we print are: the terminal's, or ``$COLUMNS`` when set; 160 for a
pipe or a CI log, which is not 80 columns wide and would cut names. (Imported by the CLI at
start-up, so it stays free of anything heavy.)"""

from __future__ import annotations

import os
from typing import TextIO


def console_width(stream: TextIO) -> int | None:
    """None (let rich measure the terminal or read ``$COLUMNS``) or 160."""
    return None if stream.isatty() or os.environ.get("COLUMNS") else 160
