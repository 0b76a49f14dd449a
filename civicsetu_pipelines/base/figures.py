"""Matplotlib figures as PNG bytes that depend only on the picture (the report and the graph)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image


def figure_png(fig: Figure) -> bytes:
    """The figure as a 256-colour PNG: a third of the RGBA size, and no metadata (no software
    version, no time) so that the bytes depend only on the picture. The palette is found by
    octree and the PNG compressed at zlib's default level: 0.04 s a graph picture, against
    0.35 s by median cut with PNG optimization, for a file 15% smaller."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = Image.fromarray(np.asarray(canvas.buffer_rgba())).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.FASTOCTREE,
                             dither=Image.Dither.NONE)  # fmt: skip
    out = io.BytesIO()
    palette.save(out, format="PNG")
    return out.getvalue()
