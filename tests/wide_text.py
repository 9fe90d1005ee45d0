"""Text of one UTF-8 width (1, 2, 3 or 4 bytes a character) for the length edges.

Not one character repeated: PostgreSQL compresses a long value before it indexes it, so
1,000 times '漢' fits a b-tree entry that 1,000 different 3-byte characters overflow (the
real ids of a test suite do not repeat one character). Here each character follows the
last by a fixed stride through a block of that width, so no character comes back within a
node id's length at 3 and 4 bytes; at 4 bytes emoji alternate with CJK extension B.
"""

from __future__ import annotations

import string

BLOCKS = {
    1: string.ascii_letters + string.digits,
    2: "".join(map(chr, range(0xC0, 0x250))),  # Latin-1 letters, Latin Extended-A and B
    3: "".join(map(chr, range(0x4E00, 0xA000))),  # CJK unified ideographs
    4: "".join(map(chr, range(0x1F300, 0x1F650))),  # pictographs and emoticons
}
EXTENSION_B = "".join(map(chr, range(0x20000, 0x2A6E0)))
STRIDE = 7919  # a prime: coprime with every block's size


def _walk(block: str, count: int, start: int) -> list[str]:
    return [block[(start + i) * STRIDE % len(block)] for i in range(count)]


def wide(width: int, length: int, *, start: int = 0) -> str:
    """``length`` characters, each ``width`` bytes in UTF-8."""
    if width == 4:
        emoji = iter(_walk(BLOCKS[4], (length + 1) // 2, start))
        ideographs = iter(_walk(EXTENSION_B, length // 2, start))
        return "".join(next(ideographs if i % 2 else emoji) for i in range(length))
    return "".join(_walk(BLOCKS[width], length, start))


def without_last(text: str, width: int) -> str:
    """``text`` one character shorter: without its last character of that width."""
    for index in range(len(text) - 1, -1, -1):
        if len(text[index].encode()) == width:
            return text[:index] + text[index + 1:]
    raise ValueError(f"no {width}-byte character in the text")
