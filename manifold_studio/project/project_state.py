"""The analysis state a project keeps beyond its data sets and runs: the current preparation
chain (field ``chain``: ``[[step id, {parameters}], ...]``). Written and read by
:mod:`manifold_studio.project.project_file`."""
from __future__ import annotations

from manifold_studio.files.model_file import _jsonable
from manifold_studio.session.model import Session


def chain_document(session: Session) -> dict:
    """The session's current preparation chain as the project's ``chain`` field."""
    return {"chain": [[step, _jsonable(params)] for step, params in session.chain]}


def read_chain(session: Session, meta: dict, problems: list, file_name: str) -> None:
    """Restore the current preparation chain (``meta["chain"]``). A malformed field is reported
    and left out; a step that is not installed is kept (the chain is not lost) and reported."""
    raw = meta.get("chain") or []
    if not isinstance(raw, list) or not all(isinstance(s, (list, tuple)) and len(s) == 2 and isinstance(s[0], str)
                                            and isinstance(s[1], dict) for s in raw):
        problems.append(f"{file_name}: field 'chain' is not a list of [step id, {{parameters}}]: the "
                        "preparation chain was not restored.")
        return
    session.restore_chain(raw)
    missing = session.missing_steps()
    if missing:
        problems.append(f"{file_name}: the preparation chain names step(s) {', '.join(repr(m) for m in missing)}, "
                        f"which are not installed (installed: {', '.join(sorted(session.host.preprocessors)) or 'none'}); "
                        "the chain is kept, but a run needs those steps: install their plugin or remove them "
                        "in the Preparation dock.")
