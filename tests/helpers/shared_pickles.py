"""Pickles of shared references, a few hundred bytes that unfold without end: each level holds
the one below twice, so `depth` levels are 2**depth leaves once rendered, hashed or compared."""
import pickle


def shared_lists(depth: int) -> list:
    """A list holding the list below twice, `depth` deep (pickled, each level is stored once)."""
    deep = []
    for _ in range(depth):
        deep = [deep, deep]
    return deep


def deep_key_dict(depth: int, value: str) -> bytes:
    """A pickled `{key: value}` whose key is a tuple holding the tuple below twice, `depth` deep,
    written opcode by opcode: building that dict here would hash the key, as loading it does."""
    out = bytearray(pickle.PROTO + b"\x02" + pickle.EMPTY_DICT + pickle.EMPTY_TUPLE + pickle.BINPUT + b"\x00")
    for i in range(depth):  # drop the level below from the stack, then put it in twice from the memo
        out += pickle.POP + (pickle.BINGET + bytes([i])) * 2 + pickle.TUPLE2 + pickle.BINPUT + bytes([i + 1])
    text = value.encode()
    out += pickle.BINUNICODE + len(text).to_bytes(4, "little") + text + pickle.SETITEM + pickle.STOP
    return bytes(out)
