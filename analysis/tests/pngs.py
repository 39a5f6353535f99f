"""PNG checks without an image library: the size is in the IHDR chunk, which a PNG must start with."""

import struct

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height): the signature, then the first chunk's length, "IHDR", width, height (big-endian)."""
    with open(path, "rb") as png:
        head = png.read(24)
    assert head[:8] == SIGNATURE, f"{path} is not a PNG"
    assert head[12:16] == b"IHDR", f"{path}: the first chunk is not IHDR"
    return struct.unpack(">II", head[16:24])
