"""The import probe: a third-party plugin is first imported by a short-lived process, so that a
plugin whose import crashes the interpreter (a segmentation fault in a compiled extension,
``os._exit``), hangs or raises is found out without taking the application down.

:func:`run_probe` starts the probe — ``python -c ...`` from a pip install, or the application
itself with the hidden option ``--plugin-probe`` in the frozen application, where
``sys.executable`` is the application (:func:`probe_command`) — sends it the entry points and
``sys.path`` as JSON on its standard input, and reads one JSON line per event from its standard
output (the plugin's own prints go to standard error). Each entry point gets the import time
limit (:func:`manifold_studio.plugins.folder.import_timeout`) from the moment the probe starts
importing it; the interpreter's own start-up gets ``MANIFOLD_STUDIO_PROBE_STARTUP_TIMEOUT``
seconds (default 60). When the probe dies or hangs on one entry point, that one is condemned and
the ones after it are probed again in a new process, so every entry point gets its own verdict.

The probe registers each entry point in an empty :class:`~manifold_studio.plugins.host.PluginHost`
(its hooks are called too, so a hook that crashes is caught as well) and reports the ids it
provides. Nothing is pickled: only JSON crosses the pipe.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from manifold_studio.errors import describe_exit
from manifold_studio.plugins.folder import import_timeout

#: the hidden command-line option that makes the (frozen) application act as the probe
PROBE_FLAG = "--plugin-probe"
STARTUP_TIMEOUT_ENV = "MANIFOLD_STUDIO_PROBE_STARTUP_TIMEOUT"
DEFAULT_STARTUP_TIMEOUT = 60.0
MARK = "@manifold-studio-probe@ "  # prefix of the probe's own lines on its standard output
_CHILD_CODE = "from manifold_studio.plugins.probe_child import child_main; child_main()"
_STDERR_TAIL = 4000


@dataclass
class EntryVerdict:
    """The probe's verdict on one entry point: passed (with the ids it registers) or not."""
    name: str
    ok: bool
    reason: str = ""   # one line: why it is quarantined
    detail: str = ""   # the traceback, or the end of the probe's standard error
    algorithms: list[str] = field(default_factory=list)
    loaders: list[str] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    preprocessors: list[str] = field(default_factory=list)
    #: the probe itself could not run (not the plugin's fault): not remembered, tried again
    transient: bool = False

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, name: str, data: dict) -> "EntryVerdict":
        def texts(key):
            value = data.get(key)
            return [str(v) for v in value] if isinstance(value, list) else []
        return cls(name, data.get("ok") is True, str(data.get("reason", ""))[:2000],
                   str(data.get("detail", ""))[:20000], texts("algorithms"), texts("loaders"), texts("samples"),
                   texts("preprocessors"))


def probe_command() -> list[str]:
    """The command that starts a probe process: the application itself when frozen."""
    if getattr(sys, "frozen", False):
        return [sys.executable, PROBE_FLAG]
    return [sys.executable, "-c", _CHILD_CODE]


def startup_timeout() -> float:
    try:
        return max(1.0, float(os.environ.get(STARTUP_TIMEOUT_ENV, DEFAULT_STARTUP_TIMEOUT)))
    except ValueError:
        return DEFAULT_STARTUP_TIMEOUT


def run_probe(entry_points: list[tuple[str, str]], sys_path: list[str] | None = None,
              distribution: str | None = None, timeout: float | None = None) -> dict[str, EntryVerdict]:
    """Import ``entry_points`` (``(name, "module:attr")`` pairs) in probe processes; returns a
    verdict per entry-point name. Never raises for what the plugin does."""
    timeout = import_timeout() if timeout is None else timeout
    sys_path = list(sys.path if sys_path is None else sys_path)
    verdicts: dict[str, EntryVerdict] = {}
    todo = list(entry_points)
    while todo:
        done = _probe_once(todo, sys_path, distribution, timeout)
        verdicts.update(done)
        todo = [ep for ep in todo if ep[0] not in verdicts]
    return verdicts


def _reader(stream, lines: queue.Queue) -> None:
    try:
        for raw in stream:
            text = raw.decode("utf-8", "replace")
            if text.startswith(MARK):
                lines.put(text[len(MARK):])
    except (OSError, ValueError):
        pass
    finally:
        lines.put(None)


def _probe_once(todo, sys_path, distribution, timeout) -> dict[str, EntryVerdict]:
    """One probe process over ``todo``; returns at least one verdict (the process's end
    condemns the entry point it was importing)."""
    request = json.dumps({"entry_points": [list(ep) for ep in todo], "sys_path": sys_path,
                          "distribution": distribution})
    verdicts: dict[str, EntryVerdict] = {}
    current = todo[0][0]
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(probe_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, env=_child_env())
        except OSError as exc:
            why = f"its import probe could not start ({exc.strerror or exc}); it is tried again at the next start"
            return {name: EntryVerdict(name, False, why, transient=True) for name, _ in todo}
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
        reason = ""
        try:
            try:
                proc.stdin.write(request.encode("utf-8"))
                proc.stdin.close()
            except OSError:
                pass  # it died already: its exit status says why
            deadline = time.monotonic() + startup_timeout()
            started = False
            while True:
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    reason = (f"did not finish importing within {timeout:g} s (the probe was stopped; "
                              "the plugin may wait for something forever)" if started else
                              f"its import probe did not start within {startup_timeout():g} s")
                    break
                if line is None:  # the probe's output ended: it exited
                    try:
                        code = proc.wait(10)
                    except subprocess.TimeoutExpired:
                        code = None
                    what = describe_exit(code, "before finishing the import" if started else "before starting")
                    reason = f"the probe process importing it {what}"
                    break
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if "start" in event:
                    current, started = str(event["start"]), True
                    deadline = time.monotonic() + timeout
                elif "verdict" in event and isinstance(event.get("data"), dict):
                    name = str(event["verdict"])
                    verdicts[name] = EntryVerdict.from_dict(name, event["data"])
                elif event.get("done"):
                    return verdicts or {n: EntryVerdict(n, False, "its import probe reported nothing")
                                        for n, _ in todo}
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        err.seek(0, os.SEEK_END)
        err.seek(max(0, err.tell() - _STDERR_TAIL))
        tail = err.read().decode("utf-8", "replace").strip()
    if not started:  # the probe itself failed, not a plugin: nothing is condemned for good
        return {**verdicts, **{n: EntryVerdict(n, False, f"{reason}; it is tried again at the next start", tail,
                                               transient=True) for n, _ in todo if n not in verdicts}}
    if current in verdicts:  # it died after its last verdict: the next one is to blame
        rest = [n for n, _ in todo if n not in verdicts]
        if not rest:
            return verdicts
        current = rest[0]
    verdicts[current] = EntryVerdict(current, False, reason, tail)
    return verdicts


def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONFAULTHANDLER"] = "1"      # a crash prints the Python stack to the probe's stderr
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONSTARTUP", None)
    return env
