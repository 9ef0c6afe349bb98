# Copyright (c) OpenMMLab. All rights reserved.
"""A progress line for reading large word-vector files."""
import os
import os.path as osp
import sys
import threading
import time
from typing import Iterable


def _format_bytes(num: float) -> str:
    """Human-readable byte count, e.g. ``'3.4 GB'``."""
    for unit in ('B', 'KB', 'MB'):
        if num < 1024:
            return f'{num:.1f} {unit}'
        num /= 1024.0
    return f'{num:.2f} GB'


class ReadProgress:
    """Show how much of some files a loader has read, on stderr.

    gensim opens files itself (``smart_open`` 9 does not accept file-like
    objects), so the read position is polled from
    ``/proc/self/fdinfo`` in a background thread: no gensim internals are
    patched. Where ``/proc`` is missing only the elapsed time is shown.
    For compressed files the compressed bytes are counted.

    Args:
        paths (list[str]): Files the loader reads.
        desc (str): Text shown before the progress.
        interval (float): Seconds between updates. Defaults to 0.5.
        stream: Output stream. Defaults to ``sys.stderr``.
    """

    def __init__(self,
                 paths: Iterable[str],
                 desc: str,
                 interval: float = 0.5,
                 stream=None):
        self.paths = [osp.realpath(p) for p in paths]
        self.total = sum(osp.getsize(p) for p in self.paths)
        self.desc = desc
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        self._done = {p: 0 for p in self.paths}
        self._stop = threading.Event()
        self._thread = None
        self._start = 0.0
        self._proc = osp.isdir('/proc/self/fdinfo')

    def _poll(self) -> None:
        """Update the largest read position seen for every file."""
        if not self._proc:
            return
        try:
            fds = os.listdir('/proc/self/fd')
        except OSError:
            return
        for fd in fds:
            try:
                target = os.readlink(f'/proc/self/fd/{fd}')
                if target not in self._done:
                    continue
                with open(f'/proc/self/fdinfo/{fd}') as f:
                    for line in f:
                        if line.startswith('pos:'):
                            pos = int(line.split()[1])
                            self._done[target] = max(self._done[target], pos)
                            break
            except (OSError, ValueError):
                continue  # the fd was closed meanwhile

    def _line(self) -> str:
        elapsed = time.time() - self._start
        if not self._proc or self.total == 0:
            return f'\r{self.desc}: {elapsed:.0f} s'
        done = min(sum(self._done.values()), self.total)
        frac = done / self.total
        width = 30
        bar = '>' * int(width * frac) + ' ' * (width - int(width * frac))
        rate = done / elapsed if elapsed > 0 else 0.0
        return (f'\r{self.desc}: [{bar}] {_format_bytes(done)}/'
                f'{_format_bytes(self.total)} ({frac:.0%}), '
                f'{_format_bytes(rate)}/s, {elapsed:.0f} s')

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()
            self.stream.write(self._line())
            self.stream.flush()

    def __enter__(self) -> 'ReadProgress':
        self._start = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        self._thread.join()
        elapsed = time.time() - self._start
        status = 'failed' if exc_type is not None else 'done'
        # Clear a partially drawn progress line, then report.
        self.stream.write(f'\r{self.desc}: {status} in {elapsed:.1f} s' +
                          ' ' * 40 + '\n')
        self.stream.flush()
