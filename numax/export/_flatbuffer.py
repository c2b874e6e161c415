"""A small FlatBuffers codec: enough of the binary format to read and write jax's serialized `Exported`.

FlatBuffers (https://flatbuffers.dev/internals/) lays a buffer out little-endian: it starts with a uint32
offset to the root table. A table starts with an int32 that, subtracted from the table's position, gives its
vtable: uint16 vtable size in bytes, uint16 table size, then one uint16 per field, the field's offset from the
table start (0: absent, the reader uses the schema's default). Reference fields (strings, vectors, tables) hold
a uint32 offset relative to where it is stored, always pointing forward. A vector is a uint32 length then its
elements; a string is a vector of bytes followed by a NUL. Scalars are aligned to their size.

The `Builder` writes back to front as FlatBuffers builders do (children before parents, so every reference
points forward), keeping its bytes reversed so that each prepend is an append. Offsets it returns count from
the end of the buffer. The reader (`root_table`, `Table`) bounds-checks every access and raises
`FlatBufferError` on bytes that do not hold what was asked for. The codec knows no schema: callers name fields
by slot number (the field's index in the schema).
"""

import struct

import numpy as np


class FlatBufferError(ValueError):
    """The bytes are not a well-formed FlatBuffer for the fields read."""


_UOFFSET = struct.Struct("<I")
_VTABLE_ENTRY = 2


class Builder:
    """Builds one FlatBuffer bottom-up: make the children (strings, vectors, tables), then their parent."""

    def __init__(self):
        self._reversed = bytearray()
        self._max_align = 4

    def _size(self):
        return len(self._reversed)

    def _prepend(self, data: bytes):
        self._reversed += data[::-1]

    def _align(self, alignment, following_size):
        """Pads so that after `following_size` more bytes the end offset is a multiple of `alignment`."""
        self._max_align = max(self._max_align, alignment)
        self._prepend(bytes(-(self._size() + following_size) % alignment))

    def _prepend_uoffset(self, target):
        self._align(4, 0)
        self._prepend(_UOFFSET.pack(self._size() + 4 - target))

    def _vector(self, payload: bytes, count, element_align):
        self._align(max(4, element_align), len(payload))
        self._prepend(payload)
        self._prepend(_UOFFSET.pack(count))
        return self._size()

    def string(self, text: str) -> int:
        data = text.encode()
        return self._vector(data + b"\0", len(data), 1)

    def byte_vector(self, data: bytes) -> int:
        return self._vector(bytes(data), len(data), 1)

    def scalar_vector(self, dtype, values) -> int:
        """A vector of scalars of a numpy `dtype` (`"<u2"`, `"<u4"`, ...)."""
        array = np.asarray(values, dtype=np.dtype(dtype).newbyteorder("<"))
        return self._vector(array.tobytes(), len(array), array.itemsize)

    def offset_vector(self, offsets) -> int:
        """A vector of references to tables or strings already built."""
        self._align(4, 4 * len(offsets))
        for target in reversed(offsets):
            self._prepend_uoffset(target)
        self._prepend(_UOFFSET.pack(len(offsets)))
        return self._size()

    def table(self, scalars=(), references=()) -> int:
        """A table of `scalars`, (slot, struct format, value, default) with values equal to their default left
        out as FlatBuffers does, and `references`, (slot, offset) with offset 0 meaning absent."""
        start = self._size()
        positions = {}
        present = [(slot, fmt, value) for slot, fmt, value, default in scalars if value != default]
        for slot, fmt, value in sorted(present, key=lambda field: -struct.calcsize(field[1])):
            self._align(struct.calcsize(fmt), struct.calcsize(fmt))
            self._prepend(struct.pack("<" + fmt, value))
            positions[slot] = self._size()
        for slot, target in references:
            if target:
                self._prepend_uoffset(target)
                positions[slot] = self._size()
        vtable_entries = max(positions, default=-1) + 1
        vtable_size = 4 + _VTABLE_ENTRY * vtable_entries
        self._align(4, 4)
        self._prepend(struct.pack("<i", vtable_size))  # the vtable sits right before the table
        table_end_offset = self._size()
        field_offsets = [table_end_offset - positions[slot] if slot in positions else 0
                         for slot in range(vtable_entries)]
        self._prepend(struct.pack(f"<HH{vtable_entries}H", vtable_size, table_end_offset - start, *field_offsets))
        return table_end_offset

    def finish(self, root) -> bytes:
        self._align(self._max_align, 4)
        self._prepend_uoffset(root)
        return bytes(self._reversed[::-1])


def root_table(buffer: bytes) -> "Table":
    buffer = bytes(buffer)
    return Table(buffer, _read(buffer, "I", 0))


def _read(buffer, fmt, position):
    size = struct.calcsize(fmt)
    if position < 0 or position + size > len(buffer):
        raise FlatBufferError(f"offset {position} is outside the {len(buffer)}-byte buffer")
    return struct.unpack_from("<" + fmt, buffer, position)[0]


class Table:
    """A table in a buffer: its fields read by slot number."""

    def __init__(self, buffer, position):
        self._buffer, self._position = buffer, position
        self._vtable = position - _read(buffer, "i", position)
        self._vtable_size = _read(buffer, "H", self._vtable)
        if self._vtable_size < 4 or self._vtable_size % 2:
            raise FlatBufferError(f"the table at {position} has a malformed vtable (size {self._vtable_size})")

    def _field_position(self, slot):
        entry = 4 + _VTABLE_ENTRY * slot
        if entry + _VTABLE_ENTRY > self._vtable_size:
            return None
        offset = _read(self._buffer, "H", self._vtable + entry)
        return self._position + offset if offset else None

    def _referenced(self, slot):
        position = self._field_position(slot)
        return None if position is None else position + _read(self._buffer, "I", position)

    def has(self, slot) -> bool:
        return self._field_position(slot) is not None

    def scalar(self, slot, fmt, default=0):
        position = self._field_position(slot)
        return default if position is None else _read(self._buffer, fmt, position)

    def table(self, slot):
        position = self._referenced(slot)
        return None if position is None else Table(self._buffer, position)

    def _vector_bounds(self, slot, element_size):
        position = self._referenced(slot)
        if position is None:
            return None, 0
        count = _read(self._buffer, "I", position)
        if position + 4 + count * element_size > len(self._buffer):
            raise FlatBufferError(f"a vector of {count} elements at {position} overruns the buffer")
        return position + 4, count

    def byte_vector(self, slot) -> bytes:
        start, count = self._vector_bounds(slot, 1)
        return b"" if start is None else self._buffer[start:start + count]

    def string(self, slot):
        start, count = self._vector_bounds(slot, 1)
        return None if start is None else _decode(self._buffer[start:start + count])

    def scalar_vector(self, slot, dtype) -> np.ndarray:
        dtype = np.dtype(dtype).newbyteorder("<")
        start, count = self._vector_bounds(slot, dtype.itemsize)
        if start is None:
            return np.zeros(0, dtype)
        return np.frombuffer(self._buffer, dtype, count, start)

    def _element_positions(self, slot):
        start, count = self._vector_bounds(slot, 4)
        return [] if start is None else [start + 4 * i + _read(self._buffer, "I", start + 4 * i)
                                         for i in range(count)]

    def tables(self, slot) -> list:
        return [Table(self._buffer, position) for position in self._element_positions(slot)]

    def strings(self, slot) -> list:
        strings = []
        for position in self._element_positions(slot):
            count = _read(self._buffer, "I", position)
            if position + 4 + count > len(self._buffer):
                raise FlatBufferError(f"a string of {count} bytes at {position} overruns the buffer")
            strings.append(_decode(self._buffer[position + 4:position + 4 + count]))
        return strings


def _decode(data):
    try:
        return data.decode()
    except UnicodeDecodeError as error:
        raise FlatBufferError(f"a string field is not UTF-8: {error}") from None
