"""The probe process of :mod:`manifold_studio.plugins.probe` (started as ``python -c`` or as the
frozen application with ``--plugin-probe``): it reads the request (entry points, ``sys.path``)
as JSON from standard input, imports and registers each entry point in an empty plugin host,
and writes one JSON line per event to standard output."""
from __future__ import annotations

import faulthandler
import json
import os
import sys
from importlib import metadata

from manifold_studio.plugins.host import PluginHost
from manifold_studio.plugins.probe import MARK
from manifold_studio.plugins.wheels import GROUP


def child_main() -> None:
    """The probe process (``--plugin-probe``): read the request from standard input, import
    each entry point, report, and leave at once (``os._exit``, so no plugin thread or atexit
    handler can keep it alive)."""
    out = os.fdopen(os.dup(sys.__stdout__.fileno()), "w", encoding="utf-8")
    os.dup2(sys.__stderr__.fileno(), sys.__stdout__.fileno())  # the plugin's prints go to stderr
    faulthandler.enable()

    def send(event: dict) -> None:
        out.write(MARK + json.dumps(event) + "\n")
        out.flush()

    try:
        request = json.loads(sys.stdin.read())
        sys.path[:] = [str(p) for p in request.get("sys_path", [])] or sys.path
        distribution = request.get("distribution")
        send({"ready": True})
        host = PluginHost()
        for name, value in request.get("entry_points", []):
            send({"start": name})
            ep = metadata.EntryPoint(name=name, value=value, group=GROUP)
            info = host.load_entry_point(ep, distribution, builtin=False)
            fails = [f for f in host.failures if f.plugin == name and f.stage == "import"]
            if info is None or fails:
                f = fails[0] if fails else None
                data = {"ok": False, "reason": f.error if f else "it registered nothing",
                        "detail": f.detail if f else ""}
            else:
                data = {"ok": True, "algorithms": info.algorithms, "loaders": info.loaders,
                        "samples": info.samples, "preprocessors": info.preprocessors}
            send({"verdict": name, "data": data})
        send({"done": True})
        out.close()
    except BaseException:  # noqa: BLE001 - the parent reads the exit status
        os._exit(70)
    os._exit(0)
