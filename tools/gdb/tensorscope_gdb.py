# tools/gdb/tensorscope_gdb.py: gdb pretty-printers for tensorscope.
#
# `print x` on a ts::Tensor shows
#   ts::Tensor shape [3, 2] strides [2, 1] offset 0 float32 cpu  [1, 2, 3, 4, 5, 6]
# (the first values in row-major order, read through the strides; device
# memory is not read, its address is shown instead). ts::Dims prints as a list.
#
# gdb also shows tensors that do not hold a tensor yet: an argument before the
# function has stored it, a local before its constructor ran, a moved-from
# tensor. Every field is checked against what the Tensor constructor
# guarantees before it is used, and such a tensor prints in one of three forms:
#   ts::Tensor <undefined>                             no storage (Tensor(), moved-from)
#   ts::Tensor <invalid: dtype 37 is not a dtype>      a field no tensor can hold; the first one found
#   ts::Tensor <unreadable: its ts::Storage at 0x10>   memory it points to cannot be read
# At most MAX_VALUES elements are read, whatever the shape says. The printer
# never raises: an error of its own prints as <printer error: ...>, and
# tests/gdb_walkthrough.py fails when gdb's output holds one.
#
# The debug build embeds this file's path in the binary (.debug_gdb_scripts),
# so gdb loads it once the repository is a safe auto-load path:
#   gdb -iex "add-auto-load-safe-path $PWD" ./build/debug/tutorials/00_tensors_and_views
# or load it by hand:  (gdb) source tools/gdb/tensorscope_gdb.py
import struct

import gdb
import gdb.printing

MAX_VALUES = 8
MAX_CUDA_DEVICES = 1024  # a larger cuda:N index is garbage, not a GPU
INT64_MAX = 2**63 - 1

# ts::DType order: f32, bf16, f16, b8, i64 -> (name, element size in bytes)
DTYPES = [
    ("float32", 4),
    ("bfloat16", 2),
    ("float16", 2),
    ("bool", 1),
    ("int64", 8),
]
# ts::DeviceType order: cpu, cuda
CPU, CUDA = 0, 1


class Invalid(Exception):
    """A field holds a value that no constructed ts::Tensor or ts::Dims holds; the message names it."""


class Unreadable(Exception):
    """The memory a field points to cannot be read; the message names it and its address."""


def _require(condition, message):
    if not condition:
        raise Invalid(message)


def _load(value, what, address):
    """Reads the value's bytes from the program now, so that a bad address fails here, named."""
    try:
        value.fetch_lazy()
    except gdb.MemoryError:
        raise Unreadable(f"{what} at 0x{address:x}") from None


def _dims(value, what):
    """The entries of a ts::Dims, after checking its length against its capacity; `what` names it."""
    elems = value["values_"]["_M_elems"]
    capacity = elems.type.strip_typedefs().range()[1] + 1
    n = int(value["size_"])
    _require(0 <= n <= capacity, f"{what} of {n} dims (at most {capacity})")
    return [int(elems[i]) for i in range(n)]


def _check_view(shape, strides, offset, capacity):
    """The Tensor constructor's checks: the view addresses elements 0 to capacity - 1 only."""
    _require(len(strides) == len(shape), f"shape {shape} with {len(strides)} strides")
    _require(offset >= 0, f"negative offset {offset}")
    _require(all(s >= 0 for s in shape), f"negative size in shape {shape}")
    _require(_numel(shape) <= INT64_MAX, f"shape {shape} has more elements than int64 counts")
    if 0 in shape:
        return
    low = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    view = f"shape {shape} strides {strides} offset {offset}"
    _require(low >= 0, f"{view} reaches element {low}, before the storage")
    _require(high < capacity, f"{view} reaches element {high}, past the storage's {capacity} elements")


def _device_name(device):
    kind, index = int(device["type"]), int(device["index"])
    _require(kind in (CPU, CUDA), f"device type {kind} is not a device")
    if kind == CPU:
        _require(index == 0, f"cpu device with index {index}")
        return "cpu"
    _require(0 <= index < MAX_CUDA_DEVICES, f"cuda device index {index}")
    return f"cuda:{index}"


def _decode(raw, dtype):
    if dtype == 0:
        return struct.unpack("<f", raw)[0]
    if dtype == 1:  # bf16: the high half of a float32
        return struct.unpack("<f", b"\x00\x00" + raw)[0]
    if dtype == 2:
        return struct.unpack("<e", raw)[0]
    if dtype == 3:
        return bool(raw[0])
    return struct.unpack("<q", raw)[0]


def _fmt(v):
    if isinstance(v, float):
        return "%.4g" % v
    return str(v)


def _numel(shape):
    numel = 1
    for n in shape:
        numel *= n
    return numel


def _first_values(data, shape, strides, offset, dtype):
    """Up to MAX_VALUES elements in row-major order, read through the strides."""
    size = DTYPES[dtype][1]
    numel = _numel(shape)
    values = []
    index = [0] * len(shape)
    inferior = gdb.selected_inferior()
    for _ in range(min(numel, MAX_VALUES)):
        element = offset + sum(i * s for i, s in zip(index, strides))
        address = data + element * size
        try:
            raw = bytes(inferior.read_memory(address, size))
        except gdb.MemoryError:
            raise Unreadable(f"its data at 0x{address:x}") from None
        values.append(_fmt(_decode(raw, dtype)))
        for d in reversed(range(len(shape))):  # row-major odometer
            index[d] += 1
            if index[d] < shape[d]:
                break
            index[d] = 0
    more = ", ..." if numel > MAX_VALUES else ""
    return "[" + ", ".join(values) + more + "]"


def _describe_tensor(value):
    if value.address is not None:
        _load(value, "memory", int(value.address))
    storage_ptr = value["storage_"]["_M_ptr"]
    if int(storage_ptr) == 0:
        return "<undefined>"
    dtype = int(value["dtype_"])
    _require(0 <= dtype < len(DTYPES), f"dtype {dtype} is not a dtype")
    name, size = DTYPES[dtype]
    shape = _dims(value["shape_"], "shape")
    strides = _dims(value["strides_"], "strides")
    offset = int(value["offset_"])
    storage = storage_ptr.dereference()
    _load(storage, "its ts::Storage", int(storage_ptr))
    device_name = _device_name(storage["device_"])
    nbytes = int(storage["nbytes_"])
    _check_view(shape, strides, offset, nbytes // size)
    data = int(storage["data_"])
    _require(data != 0 or nbytes == 0, f"storage of {nbytes} bytes with a null data pointer")
    head = "shape %s strides %s offset %d %s %s" % (shape, strides, offset, name, device_name)
    if device_name != "cpu":
        return head + "  <device memory at 0x%x>" % data
    return head + "  " + _first_values(data, shape, strides, offset, dtype)


def _guarded(describe, value):
    """describe(value), or the short form that says why the value is no valid object."""
    try:
        return describe(value)
    except Invalid as e:
        return f"<invalid: {e}>"
    except Unreadable as e:
        return f"<unreadable: {e}>"
    except gdb.MemoryError as e:
        return f"<unreadable: {e}>"
    except Exception as e:  # a bug here, or a build whose fields differ: say so rather than raise
        return f"<printer error: {type(e).__name__}: {e}>"


class DimsPrinter:
    def __init__(self, value):
        self.value = value

    def to_string(self):
        return _guarded(lambda v: "[" + ", ".join(str(d) for d in _dims(v, "ts::Dims")) + "]", self.value)


class TensorPrinter:
    def __init__(self, value):
        self.value = value

    def to_string(self):
        return "ts::Tensor " + _guarded(_describe_tensor, self.value)


def build_printer():
    pp = gdb.printing.RegexpCollectionPrettyPrinter("tensorscope")
    pp.add_printer("ts::Tensor", "^ts::Tensor$", TensorPrinter)
    pp.add_printer("ts::Dims", "^ts::Dims$", DimsPrinter)
    return pp


gdb.printing.register_pretty_printer(gdb.current_objfile(), build_printer(), replace=True)
