# tools/gdb/check_printer.py: feeds the ts::Tensor pretty-printer tensors that hold garbage.
#
#   gdb -batch -nx -iex "add-auto-load-safe-path $PWD" -x tools/gdb/check_printer.py \
#       build/debug/tutorials/00_tensors_and_views
#
# Stops in add_cpu_ref once its arguments are stored, copies the valid tensor `a`
# (and its ts::Storage) into memory of its own, breaks one field of the copy at a
# time (or fills it with random bytes), and prints the copy with
# `print *(ts::Tensor*)ADDRESS`, as a learner would. Each case prints
#   ok   <case>: <what gdb printed>
# or
#   FAIL <case>: <what gdb printed>, expected <...>
# and the last line is "check_printer: N cases, M failed". tests/gdb_walkthrough.py runs it.
import random
import struct
import tempfile

import gdb

ERROR_MARKERS = ("Python Exception", "Traceback", "<error", "<printer error")
RANDOM_CASES = 16
SEED = 1234
UNREADABLE = 0x10  # the first page is never mapped


def stop_in_kernel(out_dir):
    """Runs the tutorial to add_cpu_ref's second line, where its arguments are stored; False if it never gets there."""
    gdb.execute("set pagination off")
    gdb.execute("break add_cpu_ref", to_string=True)
    try:
        gdb.execute(f"run --device cpu --out-dir {out_dir} > /dev/null", to_string=True)
        gdb.execute("next", to_string=True)
        gdb.parse_and_eval("a")
    except gdb.error as e:
        print(f"check_printer: the tutorial did not stop in add_cpu_ref: {e}")
        return False
    return True


def malloc(nbytes):
    return int(gdb.parse_and_eval(f"(char*)malloc({nbytes})"))


def offset_of(base, member):
    return int(member.address) - int(base.address)


class Layout:
    """Where each field of the live tensor `a` and of its Storage lies, from the debug info."""

    def __init__(self, tensor):
        self.storage = tensor["storage_"]["_M_ptr"].dereference()
        t, s = tensor, self.storage
        self.storage_ptr = offset_of(t, t["storage_"]["_M_ptr"])
        self.dtype = offset_of(t, t["dtype_"])
        self.offset = offset_of(t, t["offset_"])
        self.shape_size = offset_of(t, t["shape_"]["size_"])
        self.shape_values = offset_of(t, t["shape_"]["values_"])
        self.strides_size = offset_of(t, t["strides_"]["size_"])
        self.strides_values = offset_of(t, t["strides_"]["values_"])
        self.dims_size = offset_of(t["shape_"], t["shape_"]["size_"])
        self.device_type = offset_of(s, s["device_"]["type"])
        self.nbytes = offset_of(s, s["nbytes_"])
        self.data = offset_of(s, s["data_"])


def read(value):
    return bytearray(gdb.selected_inferior().read_memory(value.address, value.type.sizeof))


def put(buf, at, fmt, *values):
    struct.pack_into("<" + fmt, buf, at, *values)


def show(tensor_bytes, storage_bytes, layout):
    """gdb's `print` of a copy of the tensor (pointing at a copy of its storage when one is given)."""
    inferior = gdb.selected_inferior()
    if storage_bytes is not None:
        storage_at = malloc(len(storage_bytes))
        inferior.write_memory(storage_at, bytes(storage_bytes))
        put(tensor_bytes, layout.storage_ptr, "Q", storage_at)
    tensor_at = malloc(len(tensor_bytes))
    inferior.write_memory(tensor_at, bytes(tensor_bytes))
    return print_at("ts::Tensor", tensor_at)


def print_at(type_name, address):
    """What `print *(TYPE*)ADDRESS` shows after the "$N = ", or the gdb error it raised."""
    try:
        printed = gdb.execute(f"print *({type_name}*){address:#x}", to_string=True)
    except gdb.error as e:
        return f"gdb.error: {e}"
    return printed.split(" = ", 1)[-1].strip()


def visualize(value):
    """What the registered printer's to_string returns for value, or the exception it raised."""
    try:
        return gdb.default_visualizer(value).to_string()
    except Exception as e:
        return f"Python Exception {type(e).__name__}: {e}"


def field_cases(layout):
    """(case, change to the tensor's bytes or None, change to its storage's bytes or None, expected print).

    The tensor is tutorial 00's x: shape [3, 2], strides [2, 1], float32, a storage of 24 bytes.
    """
    big, huge = 1 << 20, 1 << 40  # a shape of big x big elements reads past x; of huge x huge, past int64

    def dims(at_size, at_values, *values):
        return lambda t: (put(t, at_size, "b", len(values)), put(t, at_values, f"{len(values)}q", *values))

    L = layout
    return [
        ("no storage (Tensor(), moved-from)", lambda t: put(t, L.storage_ptr, "Q", 0), None,
         "ts::Tensor <undefined>"),
        ("dtype 37", lambda t: put(t, L.dtype, "B", 37), None, "ts::Tensor <invalid: dtype 37 is not a dtype>"),
        ("shape of 97 dims", lambda t: put(t, L.shape_size, "b", 97), None,
         "ts::Tensor <invalid: shape of 97 dims (at most 8)>"),
        ("shape of -1 dims", lambda t: put(t, L.shape_size, "b", -1), None,
         "ts::Tensor <invalid: shape of -1 dims (at most 8)>"),
        ("strides shorter than shape", dims(L.strides_size, L.strides_values, 1), None,
         "ts::Tensor <invalid: shape [3, 2] with 1 strides>"),
        ("negative size", dims(L.shape_size, L.shape_values, 3, -2), None,
         "ts::Tensor <invalid: negative size in shape [3, -2]>"),
        ("negative offset", lambda t: put(t, L.offset, "q", -1), None, "ts::Tensor <invalid: negative offset -1>"),
        ("sizes past the storage", dims(L.shape_size, L.shape_values, big, big), None,
         f"ts::Tensor <invalid: shape [{big}, {big}] strides [2, 1] offset 0 reaches element "
         f"{(big - 1) * 3}, past the storage's 6 elements>"),
        ("more elements than int64 counts", lambda t: (dims(L.shape_size, L.shape_values, huge, huge)(t),
                                                       dims(L.strides_size, L.strides_values, 0, 0)(t)), None,
         f"ts::Tensor <invalid: shape [{huge}, {huge}] has more elements than int64 counts>"),
        ("offset past the storage", lambda t: put(t, L.offset, "q", 1), None,
         "ts::Tensor <invalid: shape [3, 2] strides [2, 1] offset 1 reaches element 6, past the storage's 6 elements>"),
        ("negative stride before the storage", dims(L.strides_size, L.strides_values, -2, 1), None,
         "ts::Tensor <invalid: shape [3, 2] strides [-2, 1] offset 0 reaches element -4, before the storage>"),
        ("storage unreadable", lambda t: put(t, L.storage_ptr, "Q", UNREADABLE), None,
         f"ts::Tensor <unreadable: its ts::Storage at {UNREADABLE:#x}>"),
        ("device type 9", None, lambda s: put(s, L.device_type, "B", 9),
         "ts::Tensor <invalid: device type 9 is not a device>"),
        ("storage smaller than the view", None, lambda s: put(s, L.nbytes, "Q", 8),
         "ts::Tensor <invalid: shape [3, 2] strides [2, 1] offset 0 reaches element 5, past the storage's 2 elements>"),
        ("null data pointer", None, lambda s: put(s, L.data, "Q", 0),
         "ts::Tensor <invalid: storage of 24 bytes with a null data pointer>"),
        ("data unreadable", None, lambda s: put(s, L.data, "Q", UNREADABLE),
         f"ts::Tensor <unreadable: its data at {UNREADABLE:#x}>"),
    ]


def check(name, printed, expected, results):
    """expected: the exact print, or a callable that says whether the print is right."""
    good = expected(printed) if callable(expected) else printed == expected
    good = good and not any(marker in printed for marker in ERROR_MARKERS)
    want = "" if good else f", expected {'a <...> form' if callable(expected) else expected}"
    print(f"{'ok  ' if good else 'FAIL'} {name}: {printed}{want}")
    results.append(good)


def main(out_dir):
    if not stop_in_kernel(out_dir):
        return
    tensor = gdb.parse_and_eval("a").referenced_value()
    layout = Layout(tensor)
    results = []
    valid = gdb.execute("print a", to_string=True).split(" = ", 1)[-1].strip()
    check("a valid copy", show(read(tensor), read(layout.storage), layout), valid, results)
    for name, change_tensor, change_storage, expected in field_cases(layout):
        tensor_bytes, storage_bytes = read(tensor), read(layout.storage)
        if change_tensor:
            change_tensor(tensor_bytes)
        if change_storage:
            change_storage(storage_bytes)
        check(name, show(tensor_bytes, storage_bytes if change_storage else None, layout), expected, results)
    # `print` itself refuses an unreadable address; a reference a frame line or a script
    # passes to the printer still reaches it unread.
    lazy = gdb.parse_and_eval(f"*(ts::Tensor*){UNREADABLE:#x}")
    check("tensor memory unreadable", visualize(lazy),
          f"ts::Tensor <unreadable: memory at {UNREADABLE:#x}>", results)
    dims_at = malloc(tensor["shape_"].type.sizeof)
    gdb.selected_inferior().write_memory(dims_at + layout.dims_size, struct.pack("b", 97))
    check("ts::Dims of 97 dims", print_at("ts::Dims", dims_at), "<invalid: ts::Dims of 97 dims (at most 8)>", results)
    rng = random.Random(SEED)
    for i in range(RANDOM_CASES):
        garbage = bytearray(rng.getrandbits(8) for _ in range(tensor.type.sizeof))
        if i % 2:  # a valid dtype, so that the checks after it run on garbage too
            put(garbage, layout.dtype, "B", rng.randrange(5))
        check(f"random bytes #{i} (seed {SEED})", show(garbage, None, layout),
              lambda p: p.startswith("ts::Tensor <") and p.endswith(">"), results)
    print(f"check_printer: {len(results)} cases, {results.count(False)} failed")


with tempfile.TemporaryDirectory(prefix="check_printer_") as folder:  # --out-dir: the tutorial stops before writing
    main(folder)
