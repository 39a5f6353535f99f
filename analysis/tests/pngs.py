"""PNG checks: the size without an image library (it is in the IHDR chunk, which a PNG must start with), and
which colours the pixels hold (decoded by matplotlib)."""

import struct

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height): the signature, then the first chunk's length, "IHDR", width, height (big-endian)."""
    with open(path, "rb") as png:
        head = png.read(24)
    assert head[:8] == SIGNATURE, f"{path} is not a PNG"
    assert head[12:16] == b"IHDR", f"{path}: the first chunk is not IHDR"
    return struct.unpack(">II", head[16:24])


def png_colours_present(path, colours):
    """Which of the colours (matplotlib names or hex) some pixel of the PNG has exactly: a marker's inside is
    its face colour, unblended, so a colour present means a point of that colour was drawn."""
    from matplotlib.colors import to_rgb
    from matplotlib.image import imread
    import numpy as np

    import os

    pixels = (imread(os.fspath(path))[..., :3] * 255).round().astype(int).reshape(-1, 3)
    found = {tuple(p) for p in np.unique(pixels, axis=0)}
    return {c for c in colours if tuple(round(v * 255) for v in to_rgb(c)) in found}
