"""Matplotlib figures as PNG bytes that depend only on the picture (the report and the graph)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image


def figure_png(fig: Figure) -> bytes:
    """The figure as a 256-colour PNG: a third of the RGBA size, and no metadata (no software
    version, no time) so that the bytes depend only on the picture."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = Image.fromarray(np.asarray(canvas.buffer_rgba())).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()
