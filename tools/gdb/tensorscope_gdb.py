# tools/gdb/tensorscope_gdb.py: gdb pretty-printers for tensorscope.
#
# `print x` on a ts::Tensor shows
#   ts::Tensor shape [3, 2] strides [2, 1] offset 0 float32 cpu  [1, 2, 3, 4, 5, 6]
# (the first values in row-major order, read through the strides; device
# memory is not read, its address is shown instead). ts::Dims prints as a list.
#
# The debug build embeds this file's path in the binary (.debug_gdb_scripts),
# so gdb loads it once the repository is a safe auto-load path:
#   gdb -iex "add-auto-load-safe-path $PWD" ./build/debug/tutorials/00_tensors_and_views
# or load it by hand:  (gdb) source tools/gdb/tensorscope_gdb.py
import struct

import gdb
import gdb.printing

MAX_VALUES = 8

# ts::DType order: f32, bf16, f16, b8, i64 -> (name, size, struct format or decoder)
DTYPES = [
    ("float32", 4),
    ("bfloat16", 2),
    ("float16", 2),
    ("bool", 1),
    ("int64", 8),
]


def _dims(value):
    n = int(value["size_"])
    return [int(value["values_"]["_M_elems"][i]) for i in range(n)]


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


class DimsPrinter:
    def __init__(self, value):
        self.value = value

    def to_string(self):
        return "[" + ", ".join(str(d) for d in _dims(self.value)) + "]"


class TensorPrinter:
    def __init__(self, value):
        self.value = value

    def to_string(self):
        storage_ptr = self.value["storage_"]["_M_ptr"]
        if int(storage_ptr) == 0:
            return "ts::Tensor (undefined)"
        storage = storage_ptr.dereference()
        shape = _dims(self.value["shape_"])
        strides = _dims(self.value["strides_"])
        offset = int(self.value["offset_"])
        dtype = int(self.value["dtype_"])
        name, size = DTYPES[dtype]
        device = storage["device_"]
        is_cuda = int(device["type"]) == 1
        device_name = "cuda:%d" % int(device["index"]) if is_cuda else "cpu"
        head = "ts::Tensor shape %s strides %s offset %d %s %s" % (shape, strides, offset, name, device_name)
        data = int(storage["data_"])
        if is_cuda:
            return head + "  <device memory at 0x%x>" % data
        numel = 1
        for s in shape:
            numel *= s
        values = []
        index = [0] * len(shape)
        inferior = gdb.selected_inferior()
        for _ in range(min(numel, MAX_VALUES)):
            element = offset + sum(i * s for i, s in zip(index, strides))
            raw = bytes(inferior.read_memory(data + element * size, size))
            values.append(_fmt(_decode(raw, dtype)))
            for d in reversed(range(len(shape))):  # row-major odometer
                index[d] += 1
                if index[d] < shape[d]:
                    break
                index[d] = 0
        more = ", ..." if numel > MAX_VALUES else ""
        return head + "  [" + ", ".join(values) + more + "]"


def build_printer():
    pp = gdb.printing.RegexpCollectionPrettyPrinter("tensorscope")
    pp.add_printer("ts::Tensor", "^ts::Tensor$", TensorPrinter)
    pp.add_printer("ts::Dims", "^ts::Dims$", DimsPrinter)
    return pp


gdb.printing.register_pretty_printer(gdb.current_objfile(), build_printer(), replace=True)
