"""Checks on figures the suite writes: a real PNG of reasonable size, not a blank canvas."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path, min_bytes: int = 20_000, min_px: int = 400) -> None:
    """A PNG file of reasonable size that is not a blank canvas."""
    assert path.is_file(), path
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > min_bytes, (path, len(data))
    img = mpimg.imread(path)
    h, w = img.shape[:2]
    assert h >= min_px and w >= min_px, (path, img.shape)
    assert img.std() > 0.01
