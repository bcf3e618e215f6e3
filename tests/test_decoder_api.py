"""The two stream decoder families share one surface: same ``raw`` spellings, same events."""

import pytest

from agui_fast.core import TextMessageContentEvent, TextMessageEndEvent
from agui_fast.decoder import (
    ProtoDecoder, SseDecoder, decode_protobuf, decode_sse, iter_protobuf, iter_sse,
)
from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder

EVENTS = [TextMessageContentEvent(message_id="m", delta=str(i)) for i in range(5)] + [
    TextMessageEndEvent(message_id="m")
]
SSE = EventEncoder().encode_many(EVENTS)
PROTO = EventEncoder(AGUI_MEDIA_TYPE).encode_many(EVENTS)


# The old spellings (False/True) are checked here to mean the same; their DeprecationWarning is
# asserted in test_old_spellings_warn_and_work.
OLD_RAW = pytest.mark.filterwarnings("ignore:raw=False/True is deprecated:DeprecationWarning")


@OLD_RAW
@pytest.mark.parametrize("typed", [None, False])
def test_typed_spellings(typed):
    assert decode_sse(SSE, raw=typed) == decode_protobuf(PROTO, raw=typed) == EVENTS


@OLD_RAW
@pytest.mark.parametrize("as_dict", ["dict", True])
def test_dict_spellings(as_dict):
    sse, proto = decode_sse(SSE, raw=as_dict), decode_protobuf(PROTO, raw=as_dict)
    assert sse == proto and sse[0] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "0"}


def test_bytes_mode_and_bad_mode():
    assert decode_sse(SSE, raw="bytes")[-1] == b'{"type":"TEXT_MESSAGE_END","messageId":"m"}'
    assert len(decode_protobuf(PROTO, raw="bytes")) == len(EVENTS)
    for bad in ("xml", 3):
        with pytest.raises(ValueError):
            SseDecoder(raw=bad)
        with pytest.raises(ValueError):
            ProtoDecoder(raw=bad)


def test_iterators_stream_files(tmp_path):
    (tmp_path / "a.sse").write_bytes(SSE)
    (tmp_path / "a.pb").write_bytes(PROTO)
    assert list(iter_sse(tmp_path / "a.sse")) == list(iter_protobuf(tmp_path / "a.pb")) == EVENTS


# -- issue 9: the layered package ---------------------------------------------------------

import ast  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import agui_fast  # noqa: E402
import agui_fast.decoder  # noqa: E402
from agui_fast import _native, proto, sse  # noqa: E402
from agui_fast.errors import (  # noqa: E402
    BufferLimitError, DecodeError, EventValidationError, InvalidJsonError, ProtobufDecodeError,
    TruncatedStreamError,
)

PKG = Path(agui_fast.__file__).parent


def test_facade_names_are_plain_module_attributes():
    names = vars(agui_fast.decoder)
    for name in agui_fast.decoder.__all__:
        assert name in names and name in dir(agui_fast.decoder)
    assert "__getattr__" not in names
    assert agui_fast.decoder.decode_sse is sse.decode_sse
    assert agui_fast.decoder.decode_protobuf is proto.decode_protobuf


def test_the_struct_layer_imports_no_codec_module():
    code = (
        "import sys, agui_fast.core as c; "
        "c.TextMessageContentEvent(message_id='m', delta='d').model_dump_json(by_alias=True); "
        "c.TextMessageContentEvent.model_validate_json(b'{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"d\"}'); "
        "bad = [m for m in ('agui_fast.decoder', 'agui_fast.encoder', 'agui_fast.sse', 'agui_fast.proto', "
        "'agui_fast._typed', 'agui_fast._plumbing') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# Layers, lowest first; a module may import from its own layer or below only.
LAYERS = [
    {"errors", "_native"},
    {"core"},
    {"_typed"},
    {"_plumbing"},
    {"sse", "proto"},
    {"decoder", "encoder"},
]


def _layer(name):
    return next(i for i, layer in enumerate(LAYERS) if name in layer)


@pytest.mark.parametrize("module", ["decoder", "sse", "proto", "_typed", "_plumbing", "errors", "core"])
def test_imports_point_down_and_are_not_lazy(module):
    path = PKG / (module + ".py") if module != "core" else None
    files = [path] if path else sorted((PKG / "core").glob("*.py"))
    for f in files:
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            target = (node.module or "").split(".")[0] or node.names[0].name
            if module == "core" and node.level == 1:
                continue  # inside the core package
            if target in ("core", "errors", "_native", "_typed", "_plumbing", "sse", "proto", "decoder", "encoder"):
                if (module, target) == ("proto", "encoder") and node.col_offset > 0:
                    continue  # _event_json's (see below)
                assert _layer(target) <= _layer(module), (f.name, target)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name != "_event_json":
                # No package module imported lazily (optional dependencies may be).
                # _event_json (an encode function, owned by the encoder's rewrite) excepted.
                lazy = [n for n in ast.walk(fn) if isinstance(n, ast.ImportFrom) and n.level]
                assert not lazy, (f.name, fn.name)


def _code_lines(path):
    """Non-blank, non-comment, non-docstring lines."""
    src = path.read_text()
    tree = ast.parse(src)
    doc = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            doc.update(range(body[0].lineno, body[0].end_lineno + 1))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            doc.update(range(node.lineno, node.end_lineno + 1))  # attribute docstrings
    return sum(1 for i, line in enumerate(src.splitlines(), 1) if line.strip() and not line.strip().startswith("#") and i not in doc)


def test_the_codec_modules_stay_small():
    """decoder, sse, proto and the shared modules under ~450 code lines (the encode
    functions of proto.py excluded: they belong to the encoder)."""
    total = sum(_code_lines(PKG / f) for f in ("decoder.py", "sse.py", "proto.py", "_typed.py", "_plumbing.py"))
    src = (PKG / "proto.py").read_text()
    enc = src[src.index("# -- encoding") : src.index("# -- decoding")]
    encode_lines = sum(1 for line in enc.splitlines() if line.strip() and not line.strip().startswith("#"))
    assert total - encode_lines < 450, (total, encode_lines)


def test_iter_sse_takes_bytes_as_one_chunk():
    assert list(iter_sse(SSE)) == EVENTS
    assert list(iter_sse(bytearray(SSE))) == list(iter_protobuf(memoryview(PROTO))) == EVENTS
    assert list(iter_sse([SSE[:10].decode(), SSE[10:]])) == EVENTS  # str chunks are UTF-8


@pytest.mark.parametrize("bad", [5, 10**9, [100, 97], "data: 1\n\n", None])
def test_byte_input_is_buffer_protocol_only(bad):
    for call in (SseDecoder().feed, ProtoDecoder().feed, decode_sse, decode_protobuf):
        with pytest.raises(TypeError):
            call(bad)


def test_one_vocabulary_for_both_families():
    for family in ((SseDecoder, decode_sse, iter_sse, SSE), (ProtoDecoder, decode_protobuf, iter_protobuf, PROTO)):
        cls, whole, it, data = family
        for raw in (None, "dict", "bytes"):
            assert whole(data, raw=raw, legacy=True, max_frame_size=1 << 20, max_depth=64) == list(
                it(data, raw=raw, legacy=False, max_frame_size=1 << 20, max_depth=64, chunk_size=7)
            )
            dec = cls(raw=raw, legacy=True, max_frame_size=1 << 20, max_depth=64)
            assert dec.feed(data) + dec.close() == whole(data, raw=raw)
        with pytest.raises(TypeError):
            whole(data, None)  # options are keyword-only
        for bad in ({"raw": "xml"}, {"max_frame_size": -1}, {"max_depth": -1}):
            with pytest.raises(ValueError):
                whole(data, **bad)
            with pytest.raises(ValueError):
                cls(**bad)
        with pytest.raises(ValueError):
            list(it(data, chunk_size=0))
    import inspect

    defaults = [inspect.signature(f).parameters["chunk_size"].default for f in (iter_sse, iter_protobuf)]
    assert defaults == [sse.DEFAULT_CHUNK_SIZE] * 2


def test_old_spellings_warn_and_work():
    with pytest.warns(DeprecationWarning, match="raw=False/True"):
        assert decode_protobuf(PROTO, raw=False) == EVENTS
    with pytest.warns(DeprecationWarning, match="raw=False/True"):
        assert SseDecoder(raw=True).feed(SSE)[0] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "0"}
    with pytest.warns(DeprecationWarning, match="max_buffer_size") as rec:
        with pytest.raises(BufferLimitError):
            decode_sse(SSE, max_buffer_size=10)
    assert rec[0].filename == __file__  # points at the caller
    with pytest.warns(DeprecationWarning, match="max_buffer_size"):
        SseDecoder(max_buffer_size=100)
    with pytest.warns(DeprecationWarning, match="keyword-only"):
        assert ProtoDecoder(1 << 20).feed(PROTO) == EVENTS
    with pytest.warns(DeprecationWarning, match="keyword-only"):
        assert list(iter_protobuf(PROTO, 16)) == EVENTS


# -- issue 14: the error contract ------------------------------------------------------------

from strategies import error_key, natural_loop  # noqa: E402

BAD_SSE = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":5,"delta":"x"}\n\n'
G1 = EventEncoder(AGUI_MEDIA_TYPE).encode_binary(EVENTS[0])
BAD_PROTO = bytes.fromhex("0000000e420c0a0208071206086312022f61")  # STATE_DELTA with op enum 99


@pytest.mark.parametrize("family", ["sse", "proto"])
def test_the_natural_loop_loses_nothing_and_keeps_no_backlog(family):
    """Two bad frames per chunk, many chunks: every good event comes out of the chunk
    that holds it, whatever the chunking (issue 14 #3, #6)."""
    good, bad, cls = (SSE, BAD_SSE, SseDecoder) if family == "sse" else (PROTO, BAD_PROTO, ProtoDecoder)
    unit = good + bad + good + bad + good
    stream = unit * 20
    whole, errs = natural_loop(cls(), [stream])
    assert len(whole) == 3 * 20 * len(EVENTS) and len(errs) == 40
    for size in (1, 7, len(unit), 1000):
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert natural_loop(cls(), chunks) == (whole, errs)
    try:
        (decode_sse if family == "sse" else decode_protobuf)(stream)
    except DecodeError as e:
        assert (e.events, [error_key(x) for x in e.errors]) == (whole, errs)
    dec = cls()
    for _ in range(5):  # per chunk: exactly that chunk's events, no backlog
        with pytest.raises(DecodeError) as info:
            dec.feed(unit)
        assert len(info.value.events) == 3 * len(EVENTS) and len(info.value.errors) == 2


def test_protobuf_frame_valid_on_the_wire_but_not_a_1_0_event():
    frames = G1 + BAD_PROTO + G1
    with pytest.raises(EventValidationError) as info:
        decode_protobuf(frames)
    e = info.value
    assert (e.frame_index, e.offset, e.field) == (1, len(G1), "$.delta[0].op")
    assert e.events == [EVENTS[0], EVENTS[0]]  # G2 is not lost
    assert natural_loop(ProtoDecoder(), [frames])[0] == natural_loop(ProtoDecoder(), [G1, BAD_PROTO, G1])[0]
    with pytest.raises(TruncatedStreamError) as info:
        decode_protobuf(G1 + G1[:-1])
    assert info.value.events == [EVENTS[0]]  # typed events, never raw MessagePack bytes


def test_lone_surrogate_in_an_enum_field_is_our_error():
    from agui_fast.decoder import decode_event

    with pytest.raises(EventValidationError):
        decode_event(b'{"type":"TEXT_MESSAGE_START","messageId":"m","role":"\\ud800"}')
    with pytest.raises(EventValidationError):
        decode_event(b'{"type":"\\ud800"}')
    with pytest.raises(EventValidationError):
        decode_sse(b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"\\udfff"}\n\n')


def test_the_converters_write_the_good_events_of_a_bad_chunk(tmp_path):
    out = tmp_path / "out.pb"
    with pytest.raises(InvalidJsonError):
        proto.convert_sse_to_protobuf(SSE * 20 + b"data: {oops\n\n" + SSE * 20, out)
    assert decode_protobuf(out.read_bytes()) == EVENTS * 40
    out = tmp_path / "out.sse"
    with pytest.raises(ProtobufDecodeError):
        proto.convert_protobuf_to_sse(PROTO * 20 + b"\0\0\0\x03\xff\xff\xff" + PROTO * 20, out)
    assert decode_sse(out.read_bytes()) == EVENTS * 40


def test_feed_after_close_raises_and_close_is_idempotent():
    for cls, data in ((SseDecoder, SSE), (ProtoDecoder, PROTO)):
        dec = cls()
        assert dec.feed(data) == EVENTS
        assert dec.close() == [] and dec.close() == []
        with pytest.raises(ValueError, match="after close"):
            dec.feed(data)


def test_a_huge_protobuf_chunk_is_a_memory_error_not_an_abort():
    """A chunk the decoder cannot buffer or reserve output for is a MemoryError, not an
    abort (issue 14 #11): address space limited in a child process, mimalloc told not
    to pre-reserve its arena (which would hide the limit)."""
    pytest.importorskip("resource")
    if not Path("/proc/self/statm").exists():
        pytest.skip("needs /proc")
    code = (
        "import os, resource\n"
        "from agui_fast.proto import ProtoDecoder\n"
        "def limit():\n"
        "    used = int(open('/proc/self/statm').read().split()[0]) * os.sysconf('SC_PAGE_SIZE')\n"
        "    resource.setrlimit(resource.RLIMIT_AS, (used + (100 << 20), resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "chunk = (1 << 29).to_bytes(4, 'big') + bytes(80 << 20)\n"
        "for first in (b'', b'\\0\\0\\0'):\n"  # output reservation; the splitter's buffer
        "    dec = ProtoDecoder(max_frame_size=1 << 31)\n"
        "    dec.feed(first)\n"
        "    limit()\n"
        "    try:\n"
        "        dec.feed(chunk)\n"
        "        print('no error')\n"
        "    except MemoryError:\n"
        "        print('MemoryError')\n"
        "    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
    )
    env = {**os.environ, "MIMALLOC_ARENA_RESERVE": "0"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["MemoryError", "MemoryError"]


# Linear time on error floods: tests/test_props_linear.py.


# -- one depth limit (issue 15) -----------------------------------------------------------------


def _varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def _deep_sse(depth):
    """A STATE_SNAPSHOT frame whose event nests ``depth`` levels (the event object is 1)."""
    return b'data: {"type":"STATE_SNAPSHOT","snapshot":%s}\n\n' % (b"[" * (depth - 1) + b"]" * (depth - 1))


def _deep_proto(depth):
    """The same event as a protobuf frame, written by hand (the encoders bound nesting
    lower): Value{list_value: ListValue{values: [Value ...]}}."""
    v = b"\x32\x00"  # Value(list_value=[])
    for _ in range(depth - 2):
        lv = b"\x0a" + _varint(len(v)) + v
        v = b"\x32" + _varint(len(lv)) + lv
    body = b"\x0a\x02\x08\x06\x12" + _varint(len(v)) + v  # base.type, snapshot
    msg = b"\x3a" + _varint(len(body)) + body  # the STATE_SNAPSHOT arm
    return len(msg).to_bytes(4, "big") + msg


def test_default_max_depth_is_the_core_crates():
    assert _native.DEFAULT_MAX_DEPTH == 512 == sse.DEFAULT_MAX_DEPTH


@pytest.mark.parametrize("raw", [None, "dict", "bytes"])
@pytest.mark.parametrize("family", ["sse", "proto"])
def test_depth_limit_at_the_boundary(family, raw):
    """512 levels decode, 513 raise -- on every interpreter (the check is the framing's,
    before msgspec or the stdlib parser recurse); configurable per call."""
    deep, whole, cls, err = (
        (_deep_sse, decode_sse, SseDecoder, InvalidJsonError)
        if family == "sse"
        else (_deep_proto, decode_protobuf, ProtoDecoder, ProtobufDecodeError)
    )
    assert len(whole(deep(512), raw=raw)) == 1
    # (protobuf: far deeper values already stop at the wire decoder's stack guard)
    for data in (deep(513), deep(5000) if family == "sse" else deep(600)):
        with pytest.raises(err, match="max_depth=512" if len(data) < 3000 else None) as info:
            whole(data, raw=raw)
        assert info.value.frame_index == 0 and info.value.offset == 0
    with pytest.raises(err, match="max_depth=3"):
        whole(deep(4), raw=raw, max_depth=3)
    assert len(whole(deep(3), raw=raw, max_depth=3)) == 1
    dec = cls(raw=raw, max_depth=10)
    with pytest.raises(err) as info:
        dec.feed(deep(5) + deep(11) + deep(10))
    assert len(info.value.events) == 2  # the frames around the deep one are kept


# -- typing (issue 9 item 5) -------------------------------------------------------------------


def test_readme_imports_type_check_strictly():
    """``mypy --strict`` on a client of the README's imports: no error, and no name is
    ``Any`` (a module ``__getattr__`` re-export would be)."""
    pytest.importorskip("mypy")
    script = Path(__file__).parent / "typing" / "readme_client.py"
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir=/dev/null", str(script)],
        capture_output=True, text=True, timeout=300,
    )
    revealed = [line for line in r.stdout.splitlines() if "Revealed type is" in line]
    assert len(revealed) == 15, r.stdout
    assert not [line for line in revealed if line.endswith('"Any"')], r.stdout
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert not errors, r.stdout


# -- the native fallback chain ------------------------------------------------------------------


def _spied(backend):
    """The backend with each callable counting its calls."""
    calls = {}

    def spy(name, fn):
        if fn is None:
            return None

        def wrapped(*a):
            calls[name] = calls.get(name, 0) + 1
            return fn(*a)

        return wrapped

    names = ("many", "many_fh", "one", "one_fh", "exact")
    return tuple(spy(n, f) for n, f in zip(names, backend[:5])) + (backend[5],), calls


@pytest.mark.parametrize("mode", [None, "dict"])
@pytest.mark.parametrize("family", ["sse", "proto"])
def test_the_chain_is_bulk_then_one_by_one_then_exact(family, mode):
    """Every mode takes the bulk call first (issue 9: protobuf raw=None/"dict" used to
    take the per-event path); after a refused bulk call each frame is decoded once; only
    the refused one reaches the exact path."""
    module = sse if family == "sse" else proto
    backend, calls = _spied(module._BACKENDS[mode])
    backends = tuple(backend if m == mode else module._BACKENDS[m] for m in (None, "dict", "bytes"))
    from agui_fast._plumbing import options

    codec = _native.SseCodec(backends, options) if family == "sse" else _native.ProtoCodec(backends, options)
    whole = codec.decode_sse if family == "sse" else codec.decode_protobuf
    good, bad = (SSE, BAD_SSE) if family == "sse" else (PROTO, BAD_PROTO)
    assert len(whole(good * 10, raw=mode)) == 10 * len(EVENTS)
    assert calls == {"many": 1}
    calls.clear()
    if mode is None:
        with pytest.raises(DecodeError) as info:
            whole(good + bad + good, raw=mode)
        assert len(info.value.events) == 2 * len(EVENTS)
        assert calls == {"many": 1, "one": 2 * len(EVENTS) + 1, "exact": 1}


def test_a_call_error_pickles_with_its_events_and_errors():
    import pickle

    with pytest.raises(DecodeError) as info:
        decode_sse(SSE + BAD_SSE + SSE + BAD_SSE)
    e = pickle.loads(pickle.dumps(info.value))
    assert type(e) is type(info.value) and e.events == EVENTS * 2
    assert e.errors[0] is e and [x.frame_index for x in e.errors] == [6, 13]
    assert [x.frame_index for x in info.value.errors] == [6, 13]


def test_decode_event_depth_limit_is_the_projects_own():
    """One depth limit for single events too, the same on every interpreter (issue 15):
    512 levels decode, 513 raise our error (msgspec's own limit is the interpreter's)."""
    from agui_fast import _native
    from agui_fast.decoder import decode_event
    from agui_fast.errors import InvalidJsonError

    def event(depth):
        return b'{"type":"RAW","event":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"

    limit = _native.DEFAULT_MAX_DEPTH
    assert decode_event(event(limit)).type.value == "RAW"
    assert decode_event(event(limit).decode()).type.value == "RAW"
    with pytest.raises(InvalidJsonError, match="nested deeper"):
        decode_event(event(limit + 1))
    with pytest.raises(InvalidJsonError, match="nested deeper"):
        decode_event(memoryview(event(5000)))
    # configurable per call
    assert decode_event(event(10), max_depth=10).type.value == "RAW"
    with pytest.raises(InvalidJsonError, match="nested deeper than 9 levels"):
        decode_event(event(10), max_depth=9)
