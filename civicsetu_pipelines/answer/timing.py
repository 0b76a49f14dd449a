"""The wall time of each stage of one answer (``timings_ms`` in the result), in milliseconds."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Timer:
    """Milliseconds per stage, added up when a stage runs more than once (a comparison
    retrieves once per jurisdiction), and the total since the timer started."""

    stages: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def stage(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.stages[name] = round(self.stages.get(name, 0.0) + (now - since) * 1000, 2)
        return now

    def finish(self) -> dict[str, float]:
        return {**self.stages, "total": round((time.perf_counter() - self.started) * 1000, 2)}
