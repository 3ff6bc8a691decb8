"""``run … --out result.h5ad`` and ``apply … --out result.h5ad``: results written into AnnData files
(:mod:`manifold_studio.files.anndata_out`), a new file or, with ``--h5ad-add``, added to an existing
one atomically (which may be the data file itself: only ``obsm`` / ``obs`` change, never ``X``)."""
from __future__ import annotations

from manifold_studio.cli.console import UsageError
from manifold_studio.files.anndata_out import add_to_h5ad, is_h5ad, write_h5ad

ADD_HELP = ("with --out FILE.h5ad: add the result to that existing AnnData file (atomically; it may be the "
            "--data file: only obsm / obs change, X is never rewritten) instead of writing a new file")


def add_h5ad_argument(parser) -> None:
    parser.add_argument("--h5ad-add", action="store_true", help=ADD_HELP)


def h5ad_out(args) -> bool:
    """Whether --out is an .h5ad file (checked: --h5ad-add needs one)."""
    out = getattr(args, "out", None)
    yes = out not in (None, "-") and is_h5ad(out)
    if getattr(args, "h5ad_add", False) and not yes:
        raise UsageError("--h5ad-add adds the result to an AnnData file: give --out FILE.h5ad")
    return yes


def outputs_to_check(args, outputs: tuple[str, ...]) -> tuple[str, ...]:
    """The output flags that must differ from the inputs: --out may be the data file with --h5ad-add."""
    if h5ad_out(args) and getattr(args, "h5ad_add", False):
        return tuple(o for o in outputs if o != "--out")
    return outputs


def write_h5ad_result(args, result, algorithm_id: str, kind: str, ds=None, source: str | None = None) -> str:
    """Write or add the result (``ds``: the data set fitted, ``source``: the data file of apply)."""
    if getattr(args, "h5ad_add", False):
        return add_to_h5ad(args.out, result, algorithm_id, kind, ds)
    return write_h5ad(args.out, result, algorithm_id, kind, ds, source=source)
