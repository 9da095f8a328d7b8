"""RIVAL10's per-image attribute dicts (`<stem>_attr_dict.pkl`): read without running them.

Each file is a pickle of a dict: attribute name -> a base64-encoded JPEG (or PNG) of that
attribute's mask, `entire-object` included. A pickle can run any code when it is loaded, so it is
read with an unpickler that resolves no global at all (`find_class` refuses everything): plain
dicts, strings and bytes need none, while every way of running code (a `__reduce__`, an object
of any class) needs one. A pickle that nests containers is refused before it is loaded
(`_refuse_nested`): a few bytes of shared references unfold into hours of work. Whatever loads
must then be a dict of str -> str/bytes; anything else is refused with one line naming the file,
and nothing in it runs.

A mask is decoded as RIVAL10's `save_uri_as_img` does: base64 -> image, resized to the image it
belongs to (bicubic, PIL's default), channels summed, nonzero is in.
"""
from __future__ import annotations

import binascii
import io
import pickle
import pickletools
from pathlib import Path
from typing import Dict, Tuple, Union

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError

OBJECT_KEY = "entire-object"
#: What a loaded attribute dict may hold, and nothing else.
MaskDict = Dict[str, Union[str, bytes]]


class _NoGlobals(pickle.Unpickler):
    """An unpickler that builds only literals: every global (class, function) is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"it asks for {module}.{name}, and plain data needs no code")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("it holds a persistent id")


#: The opcodes that build a container (dict, list, tuple, set).
_CONTAINERS = frozenset({"EMPTY_DICT", "DICT", "EMPTY_LIST", "LIST", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2",
                         "TUPLE3", "EMPTY_SET", "FROZENSET"})


def _refuse_nested(data: bytes) -> None:
    """Refuse, before loading, a pickle that builds more than one container. Every pickle read
    here is one flat dict, list or tuple, and nesting is what lets shared references unfold: a
    dict keyed by a tuple that holds the tuple below twice, forty deep, is 300 bytes, and loading
    it hashes 2**40 tuples (hours) before any check could look at it."""
    built = sum(op.name in _CONTAINERS for op, _, _ in pickletools.genops(data))
    if built > 1:
        raise pickle.UnpicklingError(f"it builds {built} containers, where plain data here is one flat "
                                     f"dict, list or tuple")


def read_plain_pickle(path: Path, what: str):
    """The literals a flat pickle in `path` holds (one dict, list or tuple of str, bytes,
    numbers), read with `_NoGlobals`; `DataError` naming the file and `what` it should be for
    anything that needs a global (a pickle that would run code is refused, never run) or nests
    containers (`_refuse_nested`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
        _refuse_nested(data)
        return _NoGlobals(io.BytesIO(data)).load()
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:  # noqa: BLE001 - any failure of an untrusted pickle is the file's fault
        reason = " ".join(str(e).split())[:200] or type(e).__name__  # the pickle's own text, cut short
        raise DataError(f"refused {path}: not {what} ({reason})") from None


def shown(value) -> str:
    """`value` for an error message about an untrusted pickle: as written when it is a short str or
    a short list of small ints, else its type alone. A pickle's contents are never rendered beyond
    that: a kilobyte of shared references unfolds into more text than memory holds (repr runs for
    hours), and an int of thousands of digits refuses str() altogether."""
    if type(value) is str and len(value) <= 40:
        return repr(value)
    if type(value) in (list, tuple) and len(value) <= 20 and all(type(v) is int and abs(v) < 10 ** 9 for v in value):
        return repr(value)
    return f"a {type(value).__name__}"


def read_attr_dict(path: Path) -> MaskDict:
    """The dict in `path`, read with `_NoGlobals`; `DataError` naming the file for anything but a
    dict of str -> str/bytes (including a pickle that would run code: it is refused, never run)."""
    path = Path(path)
    obj = read_plain_pickle(path, "a plain dict of attribute masks")
    if type(obj) is not dict:
        raise DataError(f"refused {path}: it holds a {type(obj).__name__}, not a dict of attribute masks")
    for key, value in obj.items():
        if type(key) is not str or type(value) not in (str, bytes):
            raise DataError(f"refused {path}: an entry {shown(key)} is a {type(key).__name__} -> "
                            f"{type(value).__name__}, not str -> str/bytes")
    return obj


def _base64(value: Union[str, bytes]) -> bytes:
    text = value.encode("ascii", "ignore") if isinstance(value, str) else value
    if text.startswith(b"data:") and b"," in text:  # a data URI: keep what follows 'base64,'
        text = text.split(b",", 1)[1]
    return binascii.a2b_base64(text)


def decode_mask(value: Union[str, bytes], image_hw: Tuple[int, int], where: str = "") -> np.ndarray:
    """One base64 mask as an HxW bool array the size of its image (RIVAL10's decoding)."""
    try:
        with Image.open(io.BytesIO(_base64(value))) as im:
            im = im.convert("RGB")
            if im.size != (image_hw[1], image_hw[0]):
                im = im.resize((image_hw[1], image_hw[0]), Image.BICUBIC)
            arr = np.asarray(im)
    except (binascii.Error, OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError) \
            as e:
        raise DataError(f"cannot decode the mask {where}: {str(e).strip() or type(e).__name__}") from None
    return arr.astype(np.int64).sum(axis=-1) != 0


class PickledMask:
    """The object mask of one RIVAL10 image: its dict's `entire-object`, decoded on `read`."""

    def __init__(self, path: Path, key: str = OBJECT_KEY):
        self.path, self.key = Path(path), key

    def read(self, image_hw: Tuple[int, int]) -> np.ndarray:
        masks = read_attr_dict(self.path)
        if self.key not in masks:
            raise DataError(f"{self.path} has no {self.key!r} mask")
        return decode_mask(masks[self.key], image_hw, f"{self.key!r} of {self.path}")

    def __repr__(self) -> str:
        return f"PickledMask({str(self.path)!r}, {self.key!r})"
