"""Extraction mode: what `trn-parallel-compile` runs a training script in.

With TRN_EXTRACT_GRAPHS_ONLY=1, every step call traces and translates its
graph but neither compiles nor runs it: each distinct graph is written once
next to the manifest (TRN_GRAPH_MANIFEST) as `<key>.mlir`, one JSON line per
step call is appended to the manifest, the step returns a zero loss so the
script's own logic keeps running, and after TRN_EXTRACT_MAX_STEPS step calls
(default: once two optimizer steps in a row -- accumulation windows --
brought no new graph) the script ends with
exit status 0 and a message.

Several processes may append to one manifest: each record is one write(2) of
one line to a file opened with O_APPEND, under an exclusive flock.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import tempfile
from typing import Any, Dict, Optional

from .errors import ExtractionStop, TrnError

ENV_ENABLE = "TRN_EXTRACT_GRAPHS_ONLY"
ENV_MANIFEST = "TRN_GRAPH_MANIFEST"
ENV_MAX_STEPS = "TRN_EXTRACT_MAX_STEPS"
ENV_ANALYZE = "TRN_ANALYZE"


def enabled() -> bool:
    value = os.environ.get(ENV_ENABLE, "")
    if value in ("", "0"):
        return False
    if value != "1":
        raise TrnError(f"{ENV_ENABLE}={value!r} is not understood; set it to 1 "
                       "(extract graphs only) or 0")
    return True


def analyzing() -> bool:
    """`trn-parallel-compile --command analyze` sets TRN_ANALYZE=1: an
    unsupported op is recorded in the manifest instead of ending the script."""
    return os.environ.get(ENV_ANALYZE, "") not in ("", "0")


class Extractor:
    """The extraction state of this process."""

    def __init__(self) -> None:
        manifest = os.environ.get(ENV_MANIFEST, "")
        if not manifest:
            raise TrnError(f"{ENV_ENABLE}=1 needs {ENV_MANIFEST}=<path of the "
                           "JSON-lines manifest to append to>")
        self.manifest = os.path.abspath(manifest)
        self.directory = os.path.dirname(self.manifest)
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as error:
            raise TrnError(f"cannot create the manifest directory "
                           f"{self.directory}: {error.strerror}") from None
        raw = os.environ.get(ENV_MAX_STEPS, "")
        self.max_steps: Optional[int] = None
        if raw:
            try:
                self.max_steps = int(raw)
            except ValueError:
                self.max_steps = -1
            if self.max_steps is None or self.max_steps < 1:
                raise TrnError(f"{ENV_MAX_STEPS}={raw!r} must be a positive "
                               "integer")
        self.steps = 0
        self.updates_without_new_graph = 0
        self.window_brought_new_graph = False
        self.seen_keys: set = set()
        self.seen_problems: set = set()

    def record(self, key: str, text: str, record: Dict[str, Any]) -> bool:
        """Writes the graph (once) and appends the manifest line; returns
        whether this process saw the key for the first time."""
        new = key not in self.seen_keys
        self.seen_keys.add(key)
        graph_path = os.path.join(self.directory, f"{key}.mlir")
        if not os.path.exists(graph_path):
            fd, temp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp",
                                        dir=self.directory)
            with os.fdopen(fd, "w") as out:
                out.write(text)
            os.replace(temp, graph_path)
        self._append(dict(record, key=key, graph=graph_path))
        return new

    def record_problem(self, message: str, record: Dict[str, Any]) -> bool:
        """Appends a record of a step that could not be translated (analyze
        mode); returns whether this process saw the problem first."""
        new = message not in self.seen_problems
        self.seen_problems.add(message)
        if new:
            self._append(record)
        return new

    def _append(self, record: Dict[str, Any]) -> None:
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        fd = os.open(self.manifest, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def finish_step(self, brought_new_graph: bool, update: bool) -> None:
        """Counts a step call (`update`: it ended an accumulation window);
        ends the script when extraction is done."""
        self.steps += 1
        self.window_brought_new_graph |= brought_new_graph
        if update:
            self.updates_without_new_graph = (
                0 if self.window_brought_new_graph
                else self.updates_without_new_graph + 1)
            self.window_brought_new_graph = False
        if self.max_steps is not None:
            done = self.steps >= self.max_steps
            why = f"{ENV_MAX_STEPS}={self.max_steps}"
        else:
            # Whole optimizer steps, so that the micro-steps of a long
            # accumulation window do not end it before its update graph.
            done = self.updates_without_new_graph >= 2
            why = "two optimizer steps in a row brought no new graph"
        if done:
            sys.stdout.flush()
            calls = "1 step call" if self.steps == 1 else f"{self.steps} step calls"
            graphs = len(self.seen_keys)
            print(f"trn: extraction done after {calls} ({why}): "
                  f"{graphs} distinct graph{'' if graphs == 1 else 's'} listed in "
                  f"{self.manifest}", file=sys.stderr, flush=True)
            raise ExtractionStop(0)


_extractor: Optional[Extractor] = None


def extractor() -> Extractor:
    global _extractor
    if _extractor is None:
        _extractor = Extractor()
    return _extractor
