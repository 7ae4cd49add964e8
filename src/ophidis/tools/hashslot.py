"""Short tags that hash to a wanted slot (redis-benchmark's ``{tag}`` keys);
the key -> slot mapping itself is the server's (ophidis.cluster.slots)."""

from __future__ import annotations

import itertools
import string
from binascii import crc_hqx

from ophidis.cluster.slots import SLOTS, key_hash_slot  # noqa: F401 - the tools' one import for both

_ALPHABET = (string.ascii_letters + string.digits).encode()
_tags = {}


def tag_for_slot(slot: int) -> bytes:
    """A tag of 1 to 3 characters whose hash slot is ``slot``."""
    if slot in _tags:
        return _tags[slot]
    for n in (1, 2, 3):
        for chars in itertools.product(_ALPHABET, repeat=n):
            tag = bytes(chars)
            s = crc_hqx(tag, 0) & 0x3FFF
            _tags.setdefault(s, tag)
            if s == slot:
                return tag
    raise ValueError("no tag for slot %d" % slot)
