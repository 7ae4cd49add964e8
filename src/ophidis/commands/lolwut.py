"""LOLWUT [VERSION v] [args...]: the version line, with a piece of computer
art for the versions that have one, as Redis does: version 5 draws Georg
Nees's "Schotter" (squares that fall into disorder row by row) in Braille
dots, version 6 a night skyline in terminal colours; any other version only
says which Redis version the server reports.  Written for Ophidis: the
pictures are random, so only their kind, size and caption match Redis's."""

from __future__ import annotations

import math
import random

from .. import sysinfo
from ..cmdtable.registry import command
from ..errors import RedisError
from ..protocol.resp import verbatim
from ..util import parse_int

_NOT_INT = RedisError("ERR value is not an integer or out of range")


class Canvas:
    """A grid of small colour numbers; drawing outside it is ignored."""

    def __init__(self, width: int, height: int, bg: int = 0):
        self.width = width
        self.height = height
        self.px = bytearray([bg]) * (width * height)

    def set(self, x: int, y: int, color: int):
        if 0 <= x < self.width and 0 <= y < self.height:
            self.px[x + y * self.width] = color

    def get(self, x: int, y: int) -> int:
        if 0 <= x < self.width and 0 <= y < self.height:
            return self.px[x + y * self.width]
        return 0

    def line(self, x0: int, y0: int, x1: int, y1: int, color: int = 1):
        """Bresenham's line, both ends included."""
        dx, dy = abs(x1 - x0), abs(y1 - y0)
        stepx = 1 if x0 < x1 else -1
        stepy = 1 if y0 < y1 else -1
        err = dx - dy
        while True:
            self.set(x0, y0, color)
            if x0 == x1 and y0 == y1:
                return
            twice = 2 * err
            if twice > -dy:
                err -= dy
                x0 += stepx
            if twice < dx:
                err += dx
                y0 += stepy

    def square(self, cx: int, cy: int, side: float, angle: float):
        """A square of the given side centred on (cx, cy), turned by angle:
        its corners lie on a circle of radius side / sqrt(2)."""
        r = round(side / math.sqrt(2))
        pts = []
        for k in range(4):
            a = math.pi / 4 + angle + k * math.pi / 2
            pts.append((round(math.sin(a) * r + cx), round(math.cos(a) * r + cy)))
        for k in range(4):
            (x0, y0), (x1, y1) = pts[k], pts[(k + 1) % 4]
            self.line(x0, y0, x1, y1)


def braille(c: Canvas) -> bytes:
    """Each 2x4 block of pixels as one Braille character (U+2800 + dots)."""
    rows = []
    bits = ((0, 0, 0x01), (0, 1, 0x02), (0, 2, 0x04), (1, 0, 0x08),
            (1, 1, 0x10), (1, 2, 0x20), (0, 3, 0x40), (1, 3, 0x80))
    for y in range(0, c.height, 4):
        chars = []
        for x in range(0, c.width, 2):
            dots = 0
            for dx, dy, bit in bits:
                if c.get(x + dx, y + dy):
                    dots |= bit
            chars.append(chr(0x2800 + dots))
        # a line break after every row but one ending on the last pixel row
        rows.append("".join(chars) + ("" if y == c.height - 1 else "\n"))
    return "".join(rows).encode()


def schotter(cols: int, per_row: int, per_col: int) -> Canvas:
    width = cols * 2
    pad = 2 if width > 4 else 0
    side = (width - pad * 2) / per_row
    c = Canvas(width, int(side * per_col + pad * 2))
    rnd = random.random
    for y in range(per_col):
        for x in range(per_row):
            sx = int(x * side + side / 2 + pad)
            sy = int(y * side + side / 2 + pad)
            angle = 0.0
            if y > 1:       # the lower the row, the larger the disorder
                turn, shiftx, shifty = (rnd() / per_col * y * random.choice((1, -1)) for _ in range(3))
                angle = turn
                sx += int(shiftx * side / 3)
                sy += int(shifty * side / 3)
            c.square(sx, sy, side, angle)
    return c


_COLOURS = {0: "0;30;40m", 1: "0;90;100m", 2: "0;37;47m", 3: "0;97;107m"}


def skyline(cols: int, rows: int) -> bytes:
    """Two rows of far buildings, then near ones with lit windows, each
    pixel a coloured space."""
    c = Canvas(cols, rows, 3)
    randint = random.randint

    def building(xoff, width, height, color, windows):
        bottom = c.height - 1
        top = bottom - height + 1
        for y in range(bottom, top - 1, -1):
            for x in range(xoff, xoff + width):
                if y == top and (x <= xoff + 1 or x >= xoff + width - 2):
                    continue        # rounded roof corners
                col = color
                if windows and xoff + 1 < x < xoff + width - 2 and top + 1 < y < bottom - 1:
                    rx, ry = x - xoff - 1, y - top - 1
                    if (rx // 2) % 2 and ry % 2:
                        col = c.get(x - 1, y) if rx % 2 else (2 if color == 1 else 1)
                c.set(x, y, col)

    for color in (2, 1):
        off = -10
        while off < c.width:
            off += randint(0, 7)
            width = 10 + randint(0, 8)
            height = c.height // 2 + randint(0, max(0, c.height // (2 if color == 2 else 3) - 1))
            building(off, width, height, color, False)
            off += width // 2 if color == 2 else width + 1
    off = -10
    while off < c.width:
        off += randint(0, 7)
        width = 5 + randint(0, 13)
        if width % 4:
            width += width % 3
        building(off, width, c.height // 3 + randint(0, max(0, c.height // 2 - 1)), 0, True)
        off += width + 5
    lines = []
    for y in range(c.height):
        lines.append("".join("\033[%s \033[0m" % _COLOURS[c.get(x, y)] for x in range(c.width)))
    return "\n".join(lines).encode()


def _longs(argv, defaults):
    out = list(defaults)
    for i, a in enumerate(argv[:len(defaults)]):
        out[i] = parse_int(a, _NOT_INT)
    return out


def _clamp(v, lo, hi):
    return lo if v < lo else hi if v > hi else v


@command("lolwut")
def lolwut(c, argv):
    version = sysinfo.REDIS_VERSION
    args = argv[1:]
    if len(argv) >= 3 and argv[1].lower() == b"version":
        version = "%d.0.0" % (parse_int(argv[2], _NOT_INT) & 0xFFFFFFFF)
        args = argv[3:]
    tail = ("Redis ver. %s\n" % sysinfo.REDIS_VERSION).encode()
    major, _, rest = version.partition(".")
    if (major == "5" and rest[:1] != "9") or (major == "4" and rest[:1] == "9"):
        cols, per_row, per_col = _longs(args, (66, 8, 12))
        art = braille(schotter(_clamp(cols, 1, 1000), _clamp(per_row, 1, 200), _clamp(per_col, 1, 200)))
        text = art + b"\nGeorg Nees - schotter, plotter on paper, 1968. " + tail
    elif (major == "6" and rest[:1] != "9") or (major == "5" and rest[:1] == "9"):
        cols, rows = _longs(args, (80, 20))
        text = (skyline(_clamp(cols, 1, 1000), _clamp(rows, 1, 1000))
                + b"\nDedicated to the 8 bit game developers of past and present.\n"
                  b"Original 8 bit image from Plaguemon by hikikomori. " + tail)
    else:
        text = tail
    return verbatim(c.resp, text)
