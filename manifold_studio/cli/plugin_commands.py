"""``manifold-studio plugins list | install FILE.whl | uninstall NAME | enable NAME | disable NAME``.

The command-line face of :mod:`manifold_studio.plugins.manager` (Qt-free). ``list`` shows every
plugin (built-in, user folder, pip) with its version, status and what it provides; failed
plugins with their error (``-v``: the traceback); *quarantined* ones (their import probe
crashed, hung or raised, so they were not imported) with the reason and how to retry them. Refused operations exit with status 2 and one
line ``manifold-studio: error: ...`` naming the problem; nothing is changed then.
"""
from __future__ import annotations

import json

from manifold_studio.cli.console import EXIT_OK, UsageError
from manifold_studio.plugins import manager as pm
from manifold_studio.plugins import quarantine
from manifold_studio.plugins.host import get_host, reload_host


def add_plugins_parser(sub) -> None:
    """Add the ``plugins`` command to the main parser's sub-parsers."""
    p = sub.add_parser("plugins", help="list, install, uninstall, enable or disable plugins",
                       description="Manage plugins: third-party plugin wheels (.whl) are installed into "
                       f"the per-user plugin folder ({pm.PLUGIN_DIR_ENV} overrides it).")
    psub = p.add_subparsers(dest="plugins_command", metavar="ACTION")
    q = psub.add_parser("list", help="every plugin with origin, version, status and algorithms")
    q.add_argument("--json", action="store_true", help="machine-readable JSON output")
    q.add_argument("-v", "--verbose", action="store_true", help="also print the tracebacks of failed plugins")
    q = psub.add_parser("install", help="install a plugin wheel (.whl) into the plugin folder")
    q.add_argument("wheel", metavar="FILE.whl")
    for action, text in (("uninstall", "remove a plugin installed in the plugin folder"),
                         ("enable", "enable a disabled plugin"),
                         ("disable", "skip a plugin from the next start on (remembered)")):
        q = psub.add_parser(action, help=text)
        q.add_argument("name", metavar="NAME", help="distribution name, or entry-point name (see 'plugins list')")
    p.set_defaults(func=cmd_plugins)


def cmd_plugins(args) -> int:
    action = getattr(args, "plugins_command", None)
    if action is None or action == "list":
        return _list(getattr(args, "json", False), getattr(args, "verbose", False))
    if action == "install":
        res = pm.install_wheel(args.wheel)
        print(res.message[0].upper() + res.message[1:] + ".")
        print("It is loaded at the next start of Manifold Studio (Tools ▸ Plugins loads it in a running window).")
    elif action == "uninstall":
        print(pm.uninstall(args.name).capitalize() + ".")
    elif action in ("enable", "disable"):
        was_quarantined = pm.normalise(args.name) in quarantine.quarantined_names() or any(
            r.status == "quarantined" for r in _records_of(args.name, pm.list_plugins(get_host())))
        print(pm.set_enabled(args.name, action == "enable") + " (from the next start on).")
        if action == "enable" and was_quarantined:  # enabling forgot the verdict: probe it again now
            for r in _records_of(args.name, pm.list_plugins(reload_host())):
                print(f"{r.name} is still quarantined: {r.error}" if r.status == "quarantined" else
                      f"{r.name}: its import probe passed; it is loaded again.")
    else:  # pragma: no cover - argparse refuses other actions
        raise UsageError(f"unknown plugins action {action!r}")
    return EXIT_OK


def _records_of(name: str, records: list) -> list:
    key = pm.normalise(name)
    return [r for r in records if key in (pm.normalise(r.name), pm.normalise(r.distribution or ""))]


def _list(as_json: bool, verbose: bool) -> int:
    records = pm.list_plugins(get_host())
    if as_json:
        print(json.dumps({"plugin_folder": str(pm.plugin_dir()),
                          "plugins": [r.as_dict() for r in records]}, indent=2))
        return 0
    print(f"Plugin folder: {pm.plugin_dir()}")
    rows = [("NAME", "ORIGIN", "VERSION", "STATUS", "PROVIDES")]
    for r in records:
        provided = ", ".join(r.algorithms + r.preprocessors + r.loaders + r.samples) or "-"
        rows.append((r.name, r.origin, r.version or "?", r.status, provided))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[4])
    for r in records:
        if r.error:
            state = "quarantined, not loaded: " if r.status == "quarantined" else ""
            print(f"\n{r.name} ({r.distribution or '?'}): {state}{r.error}")
            if verbose and r.traceback:
                print(r.traceback.rstrip())
    return 0
