"""The command line's preparation and loading options: ``--prep step:name=value,...`` (a
preparation chain fitted with the model: :func:`manifold_studio.make_pipeline`), ``--role
name=meta|skip|target`` and ``--id-column C`` (loading)."""
from __future__ import annotations

from typing import Any

import manifold_studio as ms
from manifold_studio.cli.console import UsageError
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.extend.out_of_core import data_parts
from manifold_studio.plugins.host import get_host
from manifold_studio.analysis.chain import chain_imputes
from manifold_studio.data import set_roles_after_load


def parse_prep(texts: list[str] | None) -> list[tuple[str, dict[str, Any]]]:
    """``["standardize", "impute:strategy=median", "select_columns:exclude=year,sex"]`` →
    ``[(step id, parameters), ...]``, each value parsed by the step's constraints. A piece
    without ``=`` continues the previous value (a list: ``exclude=year,sex``)."""
    host = get_host()
    steps = []
    for text in texts or []:
        step_id, _, rest = text.partition(":")
        step_id = step_id.strip()
        if step_id not in host.preprocessors:
            raise InvalidParameterError(f"Unknown preparation step '{step_id}' in --prep {text}: available are "
                                        f"{', '.join(sorted(host.preprocessors)) or 'none'}.")
        cls = host.preprocessor_class(step_id)
        pairs: list[list[str]] = []
        for piece in (p for p in rest.split(",") if p.strip()) if rest.strip() else ():
            name, sep, value = piece.partition("=")
            if sep and name.strip():
                pairs.append([name.strip(), value])
            elif pairs:
                pairs[-1][1] += "," + piece
            else:
                raise UsageError(f"--prep expects STEP or STEP:NAME=VALUE,NAME=VALUE, got '{text}'")
        by_name = {p.name: p for p in cls.params}
        params = {}
        for name, value in pairs:
            if name not in by_name:
                raise InvalidParameterError(f"Unknown parameter '{name}' for preparation step {step_id}: allowed "
                                            f"are {', '.join(by_name) or 'none'}.")
            try:
                params[name] = by_name[name].parse(value)
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"--prep {step_id}: {exc}") from None
        steps.append((step_id, params))
    return steps


def with_chain(steps: list[tuple[str, dict]], estimator):
    """The estimator itself, or the pipeline of ``steps`` ending in it."""
    return ms.make_pipeline(*steps, estimator) if steps else estimator


#: the loader's note on rows with gaps kept (missing=keep): "N value(s) in M row(s) kept as NaN: …"
KEPT_AS_NAN = " kept as NaN"


def imputed_notes(notes, imputes: bool) -> list[str]:
    """A load's ``notes`` said for a chain that imputes: the loader's note on the gaps kept as
    NaN (written for a fit without an impute step: "other methods refuse NaN") becomes
    "… kept for the chain's impute step to fill."; the other notes as they are."""
    return [f"{n.split(KEPT_AS_NAN)[0]} kept for the chain's impute step to fill." if imputes and KEPT_AS_NAN in n
            else n for n in notes]


def parse_roles(items: list[str] | None) -> dict[str, str]:
    """``--role name=meta`` (repeatable; ``a=meta,b=skip`` too) → {column: role}."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in (p for p in item.split(",") if p.strip()):
            name, sep, role = part.rpartition("=")
            if not sep or not name.strip():
                raise UsageError(f"--role expects NAME=ROLE (roles: feature, target, meta, skip), got '{item}'")
            out[name.strip()] = role.strip()
    return out


def loading_options(constraints, owner: str, roles: dict[str, str], id_column: str | None,
                    keep_missing: bool, options: dict) -> tuple[dict, dict[str, str]]:
    """Add --role / --id-column / the chain's missing=keep to a loader's ``options``; returns
    (options, the roles left to set once loaded: a source without a ``roles`` option)."""
    names = {p.name: p for p in constraints}
    options = dict(options)
    if id_column is not None:
        if "id_column" not in names:
            raise UsageError(f"--id-column does not apply to {owner} (it has no id column option)")
        options["id_column"] = names["id_column"].parse(id_column)
    later: dict[str, str] = {}
    if roles:
        if "roles" in names:
            options["roles"] = names["roles"].validate({**(options.get("roles") or {}), **roles})
        else:
            later = dict(roles)
    if keep_missing and "missing" in names and "missing" not in options:
        options["missing"] = "keep"
    return options, later


def apply_roles(ds, roles: dict[str, str], source: str):
    """Set roles on a loaded data set whose loader has no ``roles`` option (a sample)."""
    if roles and ds.table is None:
        raise UsageError(f"--role does not apply to {source}: it has no table of named columns")
    return set_roles_after_load(ds, roles, source)


def add_arguments(parser, prep: bool, metas: bool = False) -> None:
    """--role and --id-column (``run``, ``score`` and ``apply``), --prep (``run`` and ``score``) and
    --no-metas (``metas``: ``run`` and ``apply``)."""
    if prep:
        parser.add_argument("--prep", action="append", metavar="STEP[:NAME=VALUE,...]",
                            help="a preparation step fitted with the model and saved with it (repeatable, in "
                            "order), e.g. standardize, impute:strategy=median, select_columns:exclude=year; "
                            "with impute, rows with missing values are kept and filled instead of dropped "
                            "(see 'manifold-studio list')")
    parser.add_argument("--role", action="append", metavar="NAME=ROLE",
                        help="a column's role when loading (repeatable): feature, target, meta (kept, not "
                        "fitted) or skip")
    parser.add_argument("--id-column", metavar="C", help="a column of unique row ids (by name or 0-based "
                        "index): the output's first column; by default the file's line numbers")
    if metas:
        parser.add_argument("--no-metas", dest="metas", action="store_false",
                            help="leave the data's meta columns out of the output (by default they follow the "
                            "row id in CSV, TSV and Parquet outputs)")


def preprocessor_listing(host, param_lines, verbose: bool, wrap) -> list[str]:
    """The lines of ``manifold-studio list`` for the preparation steps."""
    out = ["", "Preparation steps (--prep STEP:NAME=VALUE,...)"]
    for step_id in sorted(host.preprocessors):
        cls = host.preprocessor_class(step_id)
        out.append(f"    {cls.id} — {cls.name}")
        if verbose and cls.help:
            out.append(wrap(cls.help, " " * 8))
        out.extend(param_lines(cls.params, " " * 8, verbose, wrap))
    if not host.preprocessors:
        out.append("    (none)")
    return out


def apply_loading_options(args, source_options, est, options: dict) -> dict:
    """``apply``'s loader options with --role / --id-column, and missing=keep when the model's
    chain imputes (``est`` None: a model read in a worker process)."""
    options, later = loading_options(*source_options, parse_roles(args.role), args.id_column,
                                     est is not None and chain_imputes(getattr(est, "steps", ())), options)
    if later:
        raise UsageError(f"--role does not apply to {args.data} (its reader has no roles option)")
    return options


def has_column(source: str, name) -> bool:
    """Whether the header line of a CSV/TSV ``source`` (its first part) names the column ``name``."""
    if not isinstance(name, str) or not name or source.startswith("sample:"):
        return False
    try:
        first = data_parts(source)[0]
        if first.suffix.lower() not in (".csv", ".tsv", ".txt"):
            return False
        with open(first, encoding="utf-8", errors="replace", newline="") as fh:
            header = fh.readline(1 << 16)
    except (OSError, DataError, IndexError):
        return False
    cells = {c.strip().strip('"').strip("'") for c in header.replace("\t", ",").replace(";", ",").split(",")}
    return name in cells


def roles_for(source: str, roles: dict[str, str]) -> dict[str, str]:
    """The --role entries that apply to another file read with the same options (``run
    --extend``): a CSV/TSV's roles for columns its header lacks (the label, a meta) are left out."""
    try:
        first = data_parts(source)[0]
    except (DataError, IndexError):
        return roles
    if first.suffix.lower() not in (".csv", ".tsv", ".txt"):
        return roles
    return {k: v for k, v in roles.items() if has_column(str(first), k)}

