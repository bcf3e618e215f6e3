"""``agui-fast`` / ``python -m agui_fast``: the log tools and a demo.

Commands: ``convert`` (SSE / protobuf / JSON lines / Parquet, streaming), ``inspect``
(counts), ``validate`` (exit status 0/1), ``replay`` (final messages and state),
``report`` (an HTML page per log), ``bench`` (against the pure-Python peers), ``demo``. Logs are paths, globs, or ``-``
(stdin); gzip-compressed logs are read as they are. A user mistake (missing, empty,
garbage or truncated file, output onto its input) prints one line on stderr and exits
non-zero; a progress bar is drawn on stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import signal
import stat
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import _native
from ._bench import protobuf_log, pydantic_peer, run_events, sse_log
from .arrow import to_arrow
from .core import (
    CustomEvent, RunFinishedEvent, RunStartedEvent, StateDeltaEvent, StateSnapshotEvent,
    TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent, TokenUsage, ToolCallArgsEvent,
    ToolCallEndEvent, ToolCallResultEvent, ToolCallStartEvent, PROTOCOL_VERSION,
)
from .decoder import decode_protobuf, decode_sse
from .encoder import AGUI_MEDIA_TYPE, EventEncoder, to_builtins
from . import stream
from .errors import AguiError, DecodeError, StreamError, VerificationError
from .interop import to_ag_ui
from .logs import LogProgress, iter_log
from .patch import StateDocument
from .report import build as build_report

STDIN = "/dev/stdin"


class UserError(Exception):
    """A mistake on the command line: printed as one line, exit status 2."""

    status = 2


class OutputError(UserError):
    """An output that cannot or must not be written: printed as one line, exit status 1."""

    status = 1


def _demo_events():
    t = 1_767_225_600_000  # timestamps: milliseconds since the epoch
    events = [
        RunStartedEvent(thread_id="t1", run_id="r1", protocol_version=PROTOCOL_VERSION, timestamp=t),
        StateSnapshotEvent(snapshot={"status": "thinking", "steps": []}, timestamp=t + 5),
        TextMessageStartEvent(message_id="m1", role="assistant", timestamp=t + 120),
    ]
    events += [TextMessageContentEvent(message_id="m1", delta=w, timestamp=t + 150 + 30 * n)
               for n, w in enumerate(["Hello ", "from ", "agui-fast"])]
    events += [
        TextMessageEndEvent(message_id="m1", timestamp=t + 240),
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="m1", timestamp=t + 400),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"q":"ag-ui"}', timestamp=t + 430),
        ToolCallEndEvent(tool_call_id="c1", timestamp=t + 440),
        ToolCallResultEvent(message_id="r1", tool_call_id="c1", content="3 results", timestamp=t + 1650),
        StateDeltaEvent(delta=[
            {"op": "replace", "path": "/status", "value": "done"},
            {"op": "add", "path": "/steps/-", "value": {"tool": "search"}},
        ], timestamp=t + 1660),
        CustomEvent(name="note", value={"sources": 3}, timestamp=t + 1670, trace_id="7f3a"),  # an extra member
        RunFinishedEvent(thread_id="t1", run_id="r1", outcome={"type": "success"}, timestamp=t + 1700,
                         usage=[TokenUsage(provider="openai", model="gpt-4o", input_tokens=812, output_tokens=46)]),
    ]
    return events


def _timeit(fn, n: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def demo(args: argparse.Namespace) -> int:
    events = _demo_events()
    enc = EventEncoder()
    print("== a run, encoded as SSE (byte-identical to ag_ui.encoder) ==")
    stream = enc.encode_many(events)
    sys.stdout.write(stream.decode())
    decoded = decode_sse(stream)
    assert decoded == events, "round trip changed an event"
    print(f"== decoded back: {len(decoded)} events, equal to the originals ==")
    extras = decoded[-2].model_extra
    print(f"   extras kept on {type(decoded[-2]).__name__}: {extras}")

    binary = EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(events)
    print(f"== the same run as length-prefixed protobuf: {len(binary)} bytes (SSE: {len(stream)}) ==")
    from_proto = decode_protobuf(binary)
    same = sum(a == b and a.__dict__ == b.__dict__ for a, b in zip(from_proto, decoded))
    print(f"   decoded {len(from_proto)} events; {same} equal to the SSE decode "
          "(protobuf drops unknown members, as the reference does)")
    state = StateDocument()
    for ev in decoded:
        if ev.type.value == "STATE_SNAPSHOT":
            state.replace(ev.snapshot)
        elif ev.type.value == "STATE_DELTA":
            state.apply(ev.delta)
    print(f"== final state after replaying the JSON Patch deltas: {state.to_python()} ==")

    try:
        from ag_ui.encoder import EventEncoder as RefEncoder  # optional: the reference SDK
    except ImportError:
        print("(install ag-ui-protocol to compare speed with the reference encoder)")
        return 0
    ours = events[3]
    theirs = to_ag_ui(ours)
    ref = RefEncoder()
    assert enc.encode(ours) == ref.encode(theirs) == enc.encode(theirs)
    t_ref = _timeit(lambda: ref.encode(theirs), 2000)
    t_ours = _timeit(lambda: enc.encode(ours), 20000)
    t_pyd = _timeit(lambda: enc.encode(theirs), 20000)
    print("== encode one TEXT_MESSAGE_CONTENT (best of 5) ==")
    print(f"   ag_ui.encoder (pydantic):          {t_ref * 1e6:8.2f} us")
    print(f"   agui_fast, msgspec Struct:          {t_ours * 1e6:8.2f} us  ({t_ref / t_ours:5.1f}x)")
    print(f"   agui_fast, the same pydantic event: {t_pyd * 1e6:8.2f} us  ({t_ref / t_pyd:5.1f}x)")
    print("   (every benchmark: python -m benches, from a checkout)")
    return 0


# -- inputs, outputs, progress -----------------------------------------------------------------


def expand(patterns: List[str]) -> List[str]:
    """Paths from the command line: globs expanded (``**`` too), ``-`` is stdin. A
    missing file, a pattern matching nothing or a directory is a user error."""
    paths: List[str] = []
    for pat in patterns:
        if pat == "-":
            paths.append(STDIN)
            continue
        if os.path.exists(pat):
            matches = [pat]
        elif glob.has_magic(pat):
            matches = sorted(glob.glob(pat, recursive=True))
            if not matches:
                raise UserError(f"no file matches {pat}")
        else:
            raise UserError(f"{pat}: no such file")
        for m in matches:
            if os.path.isdir(m):
                raise UserError(f"{m}: is a directory (give a glob such as {m}/**/*.sse)")
            paths.append(m)
    return paths


def plural(n: int, noun: str) -> str:
    """``1 event``, ``2 events``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def shown(path: str) -> str:
    return "-" if path == STDIN else path


def _size(path: str) -> Optional[int]:
    """The size of a regular file; ``None`` for a stream (stdin, a pipe such as
    ``<(cat log)``, a device), whose bytes are only known once read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _empty(path: str) -> bool:
    return _size(path) == 0


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


class Progress:
    """The one progress line of the long commands on stderr: bytes read of the total (when
    known), events, rate. Drawn only on a terminal, not with ``--quiet``, and only once a
    command has run for a moment (a quick one prints nothing)."""

    AFTER = 0.25  # seconds before the first drawing
    EVERY = 0.1

    def __init__(self, total: Optional[int], quiet: bool = False) -> None:
        self.total = total or None
        self.on = not quiet and sys.stderr.isatty()
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.drawn = False

    def draw(self, done: int, events: int) -> None:
        if not self.on:
            return
        now = time.perf_counter()
        if now - self.t0 < self.AFTER or now - self.last < self.EVERY:
            return
        self.last = now
        rate = done / max(now - self.t0, 1e-9)
        if self.total:
            done = min(done, self.total)
            bar = "#" * (24 * done // self.total)
            head = f"[{bar:24s}] {100 * done // self.total:3d}%  {_mb(done)} of {_mb(self.total)}"
        else:
            head = f"{_mb(done)} read"
        line = f"{head}{f'  {events:,} events' if events else ''}  {rate / 1e6:,.1f} MB/s"
        sys.stderr.write("\r" + line[:120] + "\x1b[K")
        sys.stderr.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.drawn = False


def run_with_progress(call: Callable[[Any], Any], total: Optional[int], quiet: bool) -> Any:
    """``call(progress)`` (a call that reads through the ``LogProgress`` it is given: a
    native one with the GIL released, or Python code, between whose steps this thread gets
    its turns) on a worker thread, while this thread draws the progress line and stays
    ready for Ctrl-C and termination signals: on one, the call is told to stop, waited for
    a moment, and the exception goes on (the caller cleans up its outputs)."""
    progress = LogProgress()
    shown_progress = Progress(total, quiet)
    result: Dict[str, Any] = {}

    def work() -> None:
        try:
            result["value"] = call(progress)
        except BaseException as exc:  # re-raised on the calling thread
            result["error"] = exc

    worker = threading.Thread(target=work, name="agui-fast-cli", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(Progress.EVERY)
            shown_progress.draw(progress.bytes, progress.events)
    except BaseException:
        # Told to stop, the call ends within a few thousand events; one blocked on input
        # (a pipe that sends nothing) is left behind, the process ending anyway.
        progress.cancel()
        worker.join(2.0)
        raise
    finally:
        shown_progress.clear()
    if "error" in result:
        raise result["error"]
    return result["value"]


def counted(events: Iterator[Any], progress: Any, shown_progress: Progress) -> Iterator[Any]:
    """``events`` as they are read (by ``iter_log`` with ``progress``), the progress line
    drawn every few thousand of them and cleared at the end (or at an error)."""
    try:
        for n, event in enumerate(events, 1):
            if not n & 4095:
                shown_progress.draw(progress.bytes, n)
            yield event
    finally:
        shown_progress.clear()


class _Terminated(BaseException):
    """SIGTERM or SIGHUP: the command ends as on Ctrl-C (its outputs cleaned up)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated(signum)


# -- commands ----------------------------------------------------------------------------------

_SUFFIXES = {".sse": "sse", ".pb": "protobuf", ".bin": "protobuf", ".jsonl": "jsonl", ".parquet": "parquet"}
_NAMED = {"sse": ".sse", "protobuf": ".pb", "jsonl": ".jsonl", "parquet": ".parquet"}
# Skipped events listed one a line, then counted.
_SHOWN_SKIPS = 20


def _output_format(output: str, to: Optional[str]) -> Tuple[str, bool]:
    """(format, gzip) of ``-o OUTPUT`` and ``--to``: never a format other than the one a
    name says (``.sse``, ``.pb``, ``.jsonl``, ``.parquet``, each maybe ``.gz``)."""
    if output == "-":
        if to is None:
            raise UserError("give --to (sse, protobuf, jsonl or parquet) for -o -")
        return to, False
    gzip_ = output.lower().endswith(".gz")
    suffix = os.path.splitext(output[:-3] if gzip_ else output)[1].lower()
    named = _SUFFIXES.get(suffix)
    if to is not None and named is not None and named != to and suffix != ".bin":
        raise UserError(f"{output} names {named} output, not {to}: name it *{_NAMED[to]}{'.gz' if gzip_ else ''} or leave out --to")
    fmt = to or named
    if fmt is None:
        raise UserError(f"cannot tell the output format from {output}: give --to, or name it *.sse, *.pb, *.jsonl or *.parquet")
    if gzip_ and fmt == "parquet":
        raise UserError(f"{output}: Parquet compresses its own columns, not as gzip: name it *.parquet")
    return fmt, gzip_


def _may_replace(st: os.stat_result) -> bool:
    """Whether a file may be replaced by a new one of this user: only a file of this user
    (the new one would be this user's: another's would change hands) that its mode lets
    them write (a read-only file stays, also for root)."""
    if not hasattr(os, "geteuid"):
        return bool(st.st_mode & stat.S_IWUSR)
    return st.st_uid == os.geteuid() and bool(st.st_mode & stat.S_IWUSR)


def _check_output(output: str) -> Optional[os.stat_result]:
    """Refuse an output that cannot or must not be written (one line each); the existing
    file's status, ``None`` for a new file."""
    try:
        st: Optional[os.stat_result] = os.stat(output)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{output}: {exc.strerror}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{output}: is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return st  # a device or a pipe: written as it is
    parent = os.path.dirname(output) or "."
    if not os.path.isdir(parent):
        raise OutputError(f"{output}: no such directory {parent}")
    if st is not None and not _may_replace(st):
        owner = "" if not hasattr(os, "geteuid") or st.st_uid == os.geteuid() else ", owned by another user"
        raise OutputError(f"{output}: not writable (mode {stat.filemode(st.st_mode)}{owner}): not replaced")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{output}: cannot write in {parent}: permission denied")
    return st


def _partial_name(output: str) -> str:
    head, tail = os.path.split(output)
    return os.path.join(head, f".{tail}.{os.getpid()}.partial")


class FileOutput:
    """A file a command writes (``-o``), checked before anything is read
    (``_check_output``): written beside its name (``target``) and renamed into place by
    ``commit``, so that a failed or interrupted run leaves no half-written file and the
    old one as it was (``discard``). A replaced file keeps its mode; through a symbolic
    link the file it names is replaced, the link stays; a device or a pipe
    (``/dev/null``) is written as it is."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.st = _check_output(output)
        self.in_place = self.st is not None and not stat.S_ISREG(self.st.st_mode)
        self.dest = os.path.realpath(output) if not self.in_place and os.path.islink(output) else output
        self.target = output if self.in_place else _partial_name(self.dest)

    def commit(self) -> None:
        if self.in_place:
            return
        if self.st is not None:
            os.chmod(self.target, stat.S_IMODE(self.st.st_mode))
        os.replace(self.target, self.dest)

    def discard(self) -> None:
        if not self.in_place:
            _remove(self.target)

    def failed(self, exc: OSError) -> OSError:
        """``exc`` of a write, naming the user's own path (not the file written beside
        it, and also where the system's message names no file: a full disk)."""
        msg = str(exc).replace(self.target, self.output)
        if self.output not in msg:
            msg = f"{self.output}: {msg}"
        return type(exc)(msg)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def convert(args: argparse.Namespace) -> int:
    """Logs -> one output (SSE, protobuf, JSON lines or Parquet, gzipped for a ``.gz``
    name), streaming in Rust."""
    paths = expand(args.logs)
    out = None if args.output == "-" else FileOutput(args.output)
    to, gzip_ = _output_format(args.output, args.to)
    if out is None:
        if to == "parquet" and sys.stdout.isatty():
            raise UserError("refusing to write Parquet to a terminal: give -o FILE")
    else:
        for p in paths:
            if out.st is not None and p != STDIN and os.path.samefile(p, args.output):
                raise UserError(f"{args.output}: the output is one of the inputs")
    for p in paths:
        if _empty(p):
            raise UserError(f"{p}: empty file")
    sizes = [_size(p) for p in paths]
    total = None if None in sizes else sum(s or 0 for s in sizes)
    target = "-" if out is None else out.target
    if out is None:
        sys.stdout.flush()
    done = False
    try:
        try:
            rows, nbytes, skipped = run_with_progress(lambda progress: _native.convert_logs(
                paths, [shown(p) for p in paths], target, to, args.format, args.errors == "skip", progress,
                max_errors=args.max_errors, gzip=gzip_, max_frame_size=args.max_frame_size,
            ), total, args.quiet)
        except OSError as exc:
            raise (exc if out is None else out.failed(exc)) from None
        except AguiError as exc:
            if out is not None and not out.in_place:
                # (Skipping helps past a bad event, not a file that is no log at all.)
                bad_event = args.errors == "raise" and getattr(exc, "frame_index", None) is not None
                args.hint = f"nothing written to {args.output}" + (" (--errors skip converts the valid events)" if bad_event else "")
            raise
        for problem in skipped[:_SHOWN_SKIPS]:
            print(f"skipped: {problem}", file=sys.stderr)
        if len(skipped) > _SHOWN_SKIPS:
            print(f"skipped: {len(skipped) - _SHOWN_SKIPS:,} more", file=sys.stderr)
        if rows == 0 and not skipped:
            raise UserError(f"no AG-UI events in {', '.join(shown(p) for p in paths)}")
        if out is not None:
            out.commit()
        done = True
    finally:
        if not done and out is not None:
            out.discard()
    if args.output != "-":
        print(f"{', '.join(shown(p) for p in paths)} -> {args.output} ({to}{', gzip' if gzip_ else ''}): "
              + plural(rows, "event") + (f", {len(skipped):,} skipped" if skipped else ""), file=sys.stderr)
    return 1 if skipped else 0


def _span(first: Optional[int], last: Optional[int]) -> str:
    if first is None or last is None:
        return "-"
    fmt = lambda ms: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000))  # noqa: E731
    return f"{fmt(first)} .. {fmt(last)} UTC ({(last - first) / 1000:.3f} s)"


def inspect(args: argparse.Namespace) -> int:
    """Counts of each log: format, events by type, runs, threads, messages, tool calls,
    token usage, bytes, time span."""
    reports = []
    for path in expand(args.logs):
        report = run_with_progress(lambda progress: _native.inspect_log(
            path, shown(path), args.format, False, progress, max_frame_size=args.max_frame_size,
        ), _size(path), args.quiet)
        if report["format"] is None:
            raise UserError(f"{shown(path)}: {'empty file' if _empty(path) else 'empty input'}")
        if report["events"] == 0:
            raise UserError(f"{shown(path)}: no AG-UI events in {report['bytes']} bytes")
        report["file"] = shown(path)
        reports.append(report)
    if args.json:
        json.dump(reports if len(reports) > 1 else reports[0], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for r in reports:
        print(f"{r['file']}: {r['format']}{' (gzip)' if r['gzip'] else ''}, {plural(r['bytes'], 'byte')}, {plural(r['events'], 'event')}")
        for name, n in sorted(r["types"].items(), key=lambda kv: -kv[1]):
            print(f"  {name:28s} {n:10,d}")
        print(f"  runs {r['runs']}, threads {r['threads']}, messages {r['messages']}, tool calls {r['tool_calls']}")
        usage = ", ".join(f"{k} {v:,}" for k, v in r["usage"].items()) or "-"
        print(f"  token usage: {usage}")
        print(f"  time span: {_span(r['first_timestamp'], r['last_timestamp'])}")
    return 0


def _sequence_rules() -> Any:
    """The reference client's sequence rules (``verifyEvents``, after the compatibility
    boundary and chunk expansion): the stream engine's pipeline without its reducer, so
    that each event is checked and dropped (a log of any length in constant memory)."""
    return _native.Replayer(verify=True, reduce=False)


def validate(args: argparse.Namespace) -> int:
    """Decode every event of each log with the typed decoders (the schema check) and pass
    it through the sequence rules as it is read (nothing kept); exit status 1 if any log
    has a bad frame (printed with file, frame index, byte offset) or breaks a rule."""
    failed = 0
    for path in expand(args.logs):
        name = shown(path)
        count = 0
        progress = LogProgress()
        read_log = iter_log(path, args.format, progress=progress, max_frame_size=args.max_frame_size)
        events = counted(read_log, progress, Progress(_size(path), args.quiet))

        def tally() -> Iterator[Any]:
            nonlocal count
            for event in events:
                count += 1
                yield event

        problem: Optional[Tuple[Optional[int], str]] = None
        try:
            read = tally()
            if not args.schema_only:
                try:
                    _sequence_rules().push_many(read)
                except StreamError as exc:  # VerificationError too: the first violation
                    problem = (exc.index, exc.message)
            for _ in read:  # the rest: the schema check goes on to the end
                pass
        except DecodeError as exc:  # what iter_log raises
            failed += 1
            # iter_log names the log by its path (/dev/stdin for `-`): shown once, as `name`.
            message = exc.message.split(": ", 1)[-1] if exc.message.startswith(f"{path}: ") else exc.message
            # The location once: the typed decoders' messages already start with it
            # ("SSE frame 3 at byte 197", "JSONL event 1 at byte 50").
            located = exc.frame_index is None or any(
                spelled in message for spelled in (f"frame {exc.frame_index}", f"{exc.frame_index} at byte {exc.offset}")
            )
            print(f"{name}: INVALID after {count} valid events: {type(exc).__name__}: {message}"
                  + ("" if located else f" (frame {exc.frame_index}, byte offset {exc.offset})"))
            continue
        if count == 0:
            failed += 1
            print(f"{name}: INVALID: {'empty file' if _empty(path) else 'no AG-UI events'}")
            continue
        if problem is not None and args.max_errors > 0:
            print(f"{name}: frame {problem[0]}: {problem[1]}")
        failed += problem is not None
        if problem is None:
            print(f"{name}: ok ({plural(count, 'event')})")
    return 1 if failed else 0


def replay(args: argparse.Namespace) -> int:
    """Replay a log as the reference client does (``agui_fast.stream``: chunk expansion and
    the reducer): the final messages and state as JSON on stdout. A STATE_DELTA that does not
    apply is skipped atomically, as the reference client does, with a warning on stderr."""
    path = expand([args.log])[0]
    progress = LogProgress()
    read_log = iter_log(path, args.format, progress=progress, max_frame_size=args.max_frame_size)
    events = counted(read_log, progress, Progress(_size(path), args.quiet))
    first = next(events, None)
    if first is None:  # an empty or non-AG-UI file is a mistake, not an empty conversation
        raise UserError(f"{shown(path)}: {'empty file' if _empty(path) else 'no AG-UI events'}")
    applier = stream.EventApplier(raw=True)
    applier.apply_many(itertools.chain((first,), events))
    for index, message in applier.warnings:
        print(f"warning: event {index}: {message}", file=sys.stderr)
    # {"messages": [...], "state": ...} laid out as json.dump(indent=2) does, one message at a
    # time: no second copy of the messages beside the engine's.
    out = sys.stdout
    out.write('{\n  "messages": [')
    count = 0
    while True:
        try:
            message = applier.message(count)
        except IndexError:
            break
        out.write(f"{',' if count else ''}\n    " + _indented(message, 4))
        count += 1
    out.write(f"{chr(10) + '  ' if count else ''}],\n  \"state\": {_indented(applier.state_view(), 2)}\n}}\n")
    return 1 if applier.warnings and args.strict else 0


def _indented(value: Any, by: int) -> str:
    """``value`` as JSON with an indent of 2 (a non-finite float as null, a lone surrogate as
    its escape, as ``JSON.stringify`` writes them), every line after the first ``by``
    further in (a JSON text has no newline but those of its layout)."""
    return stream._json_text(value, indent=2).replace("\n", "\n" + " " * by)


_LOG_SUFFIXES = (".sse", ".pb", ".bin", ".proto", ".jsonl", ".ndjson", ".txt", ".log")


def _page_name(log: str) -> str:
    """``run.sse.gz`` -> ``run.html``, beside the log."""
    base = log[:-3] if log.endswith(".gz") else log
    stem, ext = os.path.splitext(base)
    return (stem if ext in _LOG_SUFFIXES else base) + ".html"


def report(args: argparse.Namespace) -> int:
    """One self-contained HTML page per log: the run's timeline as the stream engine
    replays it (``agui_fast.report``). Exit status 1 if a log could not be read to its end
    (its page shows what was read)."""
    paths = expand(args.logs)
    out = args.output
    if len(paths) > 1 and out == "-":
        raise UserError("-o - takes one log: give a directory for several")
    if out is None:
        if STDIN in paths:
            raise UserError("give -o FILE to report a log read from stdin")
        targets = [_page_name(p) for p in paths]
    elif out == "-" or (len(paths) == 1 and not os.path.isdir(out)):
        targets = [out]
    else:
        os.makedirs(out, exist_ok=True)
        targets = [os.path.join(out, os.path.basename(_page_name(shown(p) if p != STDIN else "stdin.sse"))) for p in paths]
    if len(set(targets)) < len(targets):
        raise UserError(f"two logs would write the same page: {', '.join(sorted({t for t in targets if targets.count(t) > 1}))}")
    for p, target in zip(paths, targets):
        if p != STDIN and target != "-" and os.path.exists(target) and os.path.samefile(p, target):
            raise UserError(f"{target}: the output is one of the inputs")
    # Every page's file checked before any log is read.
    files = [None if target == "-" else FileOutput(target) for target in targets]
    unread = 0
    for path, target, file in zip(paths, targets, files):
        if _empty(path):
            raise UserError(f"{shown(path)}: empty file")
        title = shown(path)

        def page(progress: Any) -> Any:
            # A stream (stdin, a pipe such as <(zcat log)) is read whole first: the page
            # looks at its first bytes before reading it through.
            if _size(path) is None:
                with open(path, "rb") as f:
                    return build_report(f.read(), format=args.format, verify=not args.no_verify, title=title,
                                        max_frame_size=args.max_frame_size, progress=progress)
            return build_report(path, format=args.format, verify=not args.no_verify, title=title,
                                max_frame_size=args.max_frame_size, progress=progress)

        result = run_with_progress(page, _size(path), args.quiet)
        if result.events == 0:
            raise UserError(f"{shown(path)}: no AG-UI events")
        text = result.html().encode("utf-8")
        if file is None:
            sys.stdout.buffer.write(text)
            sys.stdout.flush()
        else:
            try:
                with open(file.target, "wb") as f:
                    f.write(text)
                file.commit()
            except OSError as exc:
                raise file.failed(exc) from None
            finally:
                file.discard()
        found = result.findings
        errors = sum(f["level"] == "error" for f in found)
        unread += any(f.get("stage") == "decode" and f.get("item") is None for f in found)
        print(f"{shown(path)} -> {target}: {plural(result.events, 'event')}, {plural(len(result.data['runs']), 'run')}, "
              f"{plural(errors, 'error')}, {plural(len(found) - errors, 'warning')} ({len(text) / 1e3:,.0f} KB)",
              file=sys.stderr)
    return 1 if unread else 0


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench(args: argparse.Namespace) -> int:
    """Head-to-head on a generated log, same process: time of each way, ratio to ours."""
    events = run_events(args.events)
    sse, pb = sse_log(events), protobuf_log(events)
    rows = [
        ("SSE -> Arrow table (agui_fast.arrow.to_arrow)", lambda: to_arrow(sse)),
        ("SSE -> typed events (agui_fast decode_sse)", lambda: decode_sse(sse)),
        ("protobuf -> Arrow table (to_arrow)", lambda: to_arrow(pb)),
        ("protobuf -> typed events (decode_protobuf)", lambda: decode_protobuf(pb)),
    ]
    try:
        peer = pydantic_peer()
        rows.append(("SSE -> pydantic events (pure Python peer)", lambda: peer(sse)))
    except ImportError:
        print("(install ag-ui-protocol for the pure-Python peer)", file=sys.stderr)
    print(f"{len(events):,} events: SSE {len(sse) / 1e6:.1f} MB, protobuf {len(pb) / 1e6:.1f} MB; best of {args.repeat}")
    times = [(name, _best(fn, args.repeat)) for name, fn in rows]
    base = times[0][1]
    print(f"{'':48s} {'time':>10s} {'events/s':>12s} {'vs to_arrow(SSE)':>18s}")
    for name, t in times:
        print(f"{name:48s} {t * 1e3:8.1f}ms {len(events) / t:12,.0f} {t / base:17.1f}x")
    return 0


def _count(text: str) -> int:
    """A count option (``--max-errors``): a whole number, 0 or more."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"not a count: {text!r}")
    return min(n, sys.maxsize)


def _size_arg(text: str) -> int:
    """A size option (``--max-frame-size``): bytes, or with a suffix K, M or G (powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    scale = units.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (bytes, or a number with K, M or G)")
    return min(int(digits) * scale, sys.maxsize)


_LOGS_HELP = "paths or globs (gzip read as is); - or none: stdin when it is piped"
_EXAMPLES = """examples:
  agui-fast inspect run.sse                  counts: events by type, runs, messages, tokens
  agui-fast validate logs/*.sse.gz           every event against the 1.0 schema and sequence rules
  agui-fast replay run.pb > final.json       the final messages and state
  agui-fast convert run.sse -o run.parquet   SSE / protobuf / JSON lines (.gz too) / Parquet
  zcat run.sse.gz | agui-fast report -o run.html
"""


def _stdin_by_default(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """No LOG given: stdin when it is piped (``agui-fast inspect < run.sse``), else the
    usage error of a missing argument (exit status 2)."""
    if ("logs" in args and not args.logs) or ("log" in args and args.log is None):
        if sys.stdin is None or sys.stdin.isatty():
            parser.error("the following arguments are required: LOG")
        if "logs" in args:
            args.logs = ["-"]
        else:
            args.log = "-"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agui-fast", description="AG-UI logs: convert, inspect, validate, replay, report; and a demo.",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command")
    fmt: Dict[str, Any] = dict(choices=("auto", "sse", "protobuf", "jsonl"), default="auto", help="input format (default: detected)")
    # The long commands draw a progress line on a terminal (stderr).
    quiet = argparse.ArgumentParser(add_help=False)
    quiet.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    # The readers' frame limit (one event, protobuf message or JSON line).
    limit = argparse.ArgumentParser(add_help=False)
    limit.add_argument("--max-frame-size", type=_size_arg, default=_native.PROTO_DEFAULT_MAX_FRAME_SIZE, metavar="BYTES",
                       help="largest event in bytes (default 10 MiB; suffixes K, M, G: 64M)")

    p = sub.add_parser("demo", help="encode, decode and time a small run")
    p.set_defaults(func=demo)

    p = sub.add_parser("convert", parents=[quiet, limit], help="convert logs to SSE, protobuf, JSON lines or Parquet")
    p.add_argument("logs", nargs="*", metavar="LOG", help=_LOGS_HELP)
    p.add_argument("-o", "--output", required=True,
                   help="output file (*.sse, *.pb, *.jsonl, *.parquet; *.gz: gzip-compressed), - for stdout")
    p.add_argument("--to", choices=("sse", "protobuf", "jsonl", "parquet"), help="default: from the output's suffix")
    p.add_argument("--format", **fmt)
    p.add_argument("--errors", choices=("raise", "skip"), default="raise",
                   help="skip: leave bad events out (listed on stderr, exit status 1)")
    p.add_argument("--max-errors", type=_count, default=_native.DEFAULT_MAX_ERRORS, metavar="N",
                   help=f"with --errors skip: fail once more than N events are bad (default {_native.DEFAULT_MAX_ERRORS:,})")
    p.set_defaults(func=convert)

    p = sub.add_parser("inspect", parents=[quiet, limit], help="counts: event types, runs, threads, messages, tool calls, tokens, time span")
    p.add_argument("logs", nargs="*", metavar="LOG", help=_LOGS_HELP)
    p.add_argument("--format", **fmt)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=inspect)

    p = sub.add_parser("validate", parents=[quiet, limit], help="check every event of each log; exit status 0 (all valid) or 1")
    p.add_argument("logs", nargs="*", metavar="LOG", help=_LOGS_HELP)
    p.add_argument("--format", **fmt)
    p.add_argument("--max-errors", type=int, default=10, help="sequence errors shown per log")
    p.add_argument("--schema-only", action="store_true",
                   help="check each event against the schema only, not the sequence rules")
    p.set_defaults(func=validate)

    p = sub.add_parser("replay", parents=[quiet, limit], help="the final messages and state of a log, as JSON")
    p.add_argument("log", nargs="?", metavar="LOG", help=_LOGS_HELP)
    p.add_argument("--format", **fmt)
    p.add_argument("--strict", action="store_true", help="exit 1 if a state delta failed")
    p.set_defaults(func=replay)

    p = sub.add_parser("report", parents=[quiet, limit], help="an HTML page per log: the run's timeline, state changes, findings")
    p.add_argument("logs", nargs="*", metavar="LOG", help=_LOGS_HELP)
    p.add_argument("-o", "--output", help="the page (one log), or a directory (several); - for stdout; "
                   "default: beside each log, named after it")
    p.add_argument("--format", **fmt)
    p.add_argument("--no-verify", action="store_true",
                   help="apply every event without checking the sequence rules")
    p.set_defaults(func=report)

    p = sub.add_parser("bench", help="to_arrow and the decoders against the pure-Python peer")
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    p.set_defaults(func=bench)

    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        args = parser.parse_args(["demo"])
    _stdin_by_default(args, sub.choices[args.command])
    # Terminated or hung up: ended as on Ctrl-C, so that no half-written output is left
    # (the handlers before are put back after: `main` may be called in a program).
    before = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                before[name] = signal.signal(getattr(signal, name), _terminate)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"agui-fast {args.command}: error: {exc}", file=sys.stderr)
        return exc.status
    except (AguiError, OSError) as exc:
        if isinstance(exc, BrokenPipeError):
            return 1
        msg = exc.message if isinstance(exc, DecodeError) else str(exc)
        hint = f"; {args.hint}" if getattr(args, "hint", None) else ""
        print(f"agui-fast {args.command}: error: {type(exc).__name__}: {msg}{hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except _Terminated as exc:
        return 128 + exc.signum
    finally:
        for name, handler in before.items():
            signal.signal(getattr(signal, name), handler)
