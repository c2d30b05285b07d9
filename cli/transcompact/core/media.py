"""What an image or a document costs, read from its bytes without counting base64 as text.

Anthropic documents the cost of an image as width × height / 750 tokens, after scaling it down
so that its long edge is at most 1568 px and it costs at most about 1600 tokens
(docs.anthropic.com, "Vision", "Calculate image costs"). The size comes from the image header
(PNG, JPEG, GIF, WebP); when it cannot be read, the image is taken at that 1600-token maximum.
A PDF costs a figure per page (Anthropic: 1,500–3,000 tokens of text per page, plus the page as
an image), taken at the top of that range.
"""

from __future__ import annotations

import binascii
import math
import re
import struct

IMAGE_DIVISOR = 750
IMAGE_MAX_EDGE = 1568
IMAGE_MAX_TOKENS = 1600
IMAGE_UNKNOWN_TOKENS = IMAGE_MAX_TOKENS
PDF_PAGE_TOKENS = 3000
PDF_BYTES_PER_PAGE = 50 * 1024  # when the page objects cannot be counted (compressed object streams)

_HEADER_BASE64_CHARS = 128 * 1024  # enough for a JPEG's SOF marker after a large EXIF block
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def image_tokens(data: str | None) -> int:
    """Anthropic's cost of an image given as base64 (None: not readable, e.g. a URL)."""
    size = image_size(data) if data else None
    if size is None:
        return IMAGE_UNKNOWN_TOKENS
    scale = min(1.0, IMAGE_MAX_EDGE / max(size))
    width, height = size[0] * scale, size[1] * scale
    if width * height / IMAGE_DIVISOR > IMAGE_MAX_TOKENS:
        scale = math.sqrt(IMAGE_MAX_TOKENS * IMAGE_DIVISOR / (width * height))
        width, height = width * scale, height * scale
    return min(IMAGE_MAX_TOKENS, max(1, math.ceil(width * height / IMAGE_DIVISOR)))


def image_size(data: str) -> tuple[int, int] | None:
    """(width, height) from the header of a base64 PNG, JPEG, GIF or WebP, or None."""
    head = _decode(data[:_HEADER_BASE64_CHARS])
    if head is None:
        return None
    size = _png(head) or _gif(head) or _webp(head) or _jpeg(head)
    if size and size[0] > 0 and size[1] > 0:
        return size
    return None


def pdf_tokens(data: str | None) -> int:
    """The cost of a base64 PDF: PDF_PAGE_TOKENS per page (pages counted, else estimated by size)."""
    if not data:
        return PDF_PAGE_TOKENS
    raw = _decode(data)
    if raw is None:
        return PDF_PAGE_TOKENS
    pages = len(_PAGE.findall(raw)) or math.ceil(len(raw) / PDF_BYTES_PER_PAGE)
    return max(1, pages) * PDF_PAGE_TOKENS


def decoded_text(data: str) -> str:
    """The text a base64 text document holds (its base64 is not what the model reads)."""
    raw = _decode(data)
    return raw.decode("utf-8", "replace") if raw is not None else data


def _decode(text: str) -> bytes | None:
    text = text[: len(text) - len(text) % 4]
    try:
        return binascii.a2b_base64(text.encode("ascii"))  # base64.b64decode's work, without its import
    except (binascii.Error, ValueError):  # not base64; not ASCII
        return None


def _png(b: bytes) -> tuple[int, int] | None:
    if b.startswith(b"\x89PNG\r\n\x1a\n") and len(b) >= 24 and b[12:16] == b"IHDR":
        return struct.unpack(">II", b[16:24])
    return None


def _gif(b: bytes) -> tuple[int, int] | None:
    if b[:6] in (b"GIF87a", b"GIF89a") and len(b) >= 10:
        return struct.unpack("<HH", b[6:10])
    return None


def _webp(b: bytes) -> tuple[int, int] | None:
    if not (b[:4] == b"RIFF" and b[8:12] == b"WEBP") or len(b) < 30:
        return None
    chunk = b[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", b[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(b[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(b[24:27], "little") + 1, int.from_bytes(b[27:30], "little") + 1
    return None


def _jpeg(b: bytes) -> tuple[int, int] | None:
    if not b.startswith(b"\xff\xd8"):
        return None
    i = 2
    while i + 9 < len(b):
        if b[i] != 0xFF:
            i += 1
            continue
        marker = b[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 1 if marker == 0xFF else 2
            continue
        length = struct.unpack(">H", b[i + 2 : i + 4])[0]
        # SOF0–SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", b[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None
