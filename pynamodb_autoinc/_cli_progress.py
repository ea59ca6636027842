"""The progress line of the command line's table scans (``seed``, ``check``): on stderr when it is a terminal."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Optional, TextIO

#: The least time between two redraws of the line, in seconds: at most four a second.
INTERVAL = 0.25


class Progress:
    """``scanned 12,345 items (4,100 items/s), 3/8 segments done``, redrawn in place on ``stream`` (pip-style) at
    most once per ``interval`` seconds, and once more, ending the line, by :meth:`close`. A hidden one
    (``shown=False``) counts and prints nothing. Its methods may be called from the scan's threads."""

    def __init__(self, stream: TextIO, segments: int, *, shown: bool, clock: Callable[[], float] = time.monotonic,
                 interval: float = INTERVAL) -> None:
        self.stream, self.segments, self.shown, self.clock, self.interval = stream, segments, shown, clock, interval
        self.items, self.done, self.width = 0, 0, 0
        self.started = clock()
        self.drawn: Optional[float] = None  # when the line was last drawn
        self.lock = threading.Lock()

    def item(self) -> None:
        """One more item scanned."""
        with self.lock:
            self.items += 1
            self.draw(final=False)

    def segment(self) -> None:
        """One more segment scanned to its end."""
        with self.lock:
            self.done += 1
            self.draw(final=False)

    def close(self) -> None:
        """Draw the line a last time and end it (nothing when hidden)."""
        with self.lock:
            self.draw(final=True)

    def line(self, now: float) -> str:
        elapsed = now - self.started
        rate = f" ({self.items / elapsed:,.0f} items/s)" if elapsed > 0 else ""
        return f"scanned {self.items:,} items{rate}, {self.done}/{self.segments:,} segments done"

    def draw(self, *, final: bool) -> None:
        """Redraw the line if shown and ``interval`` has passed since the last redraw (or ``final``)."""
        if not self.shown:
            return
        now = self.clock()
        if not final and self.drawn is not None and now - self.drawn < self.interval:
            return
        self.drawn, text = now, self.line(now)
        # the padding blanks what is left of a longer line drawn before
        self.stream.write(f"\r{text.ljust(self.width)}{chr(10) if final else ''}")
        self.stream.flush()
        self.width = len(text)


def progress(segments: int, *, quiet: bool = False, stream: Optional[TextIO] = None) -> Progress:
    """The progress of a scan of ``segments`` segments, shown on ``stream`` (default: stderr) if it is a terminal
    and not ``quiet`` (``--json``)."""
    stream = sys.stderr if stream is None else stream
    return Progress(stream, segments, shown=not quiet and stream.isatty())
