"""``run … --out result.h5ad`` and ``apply … --out result.h5ad``: results written into AnnData files
(:mod:`manifold_studio.files.anndata_out`), a new file or, with ``--h5ad-add``, added to an existing
one atomically (which may be the data file itself: only ``obsm`` / ``obs`` change, never ``X``).

A run on a backed file (``-D backed=true``: the loader gave a random sample of the rows, X stays on
disk) fits on that sample and then extends the model to every row of the file, chunk by chunk
(:func:`manifold_studio.extend.out_of_core.extend_source`), reporting the peak memory."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from manifold_studio.cli.console import UsageError, format_seconds
from manifold_studio.extend.out_of_core import extend_source
from manifold_studio.files.anndata_out import add_to_h5ad, check_addable, is_h5ad, write_h5ad

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
    """The output flags that must differ from the inputs: --out may be the data file with --h5ad-add
    (checked now, before any work: an existing .h5ad file in a folder that can be written)."""
    if h5ad_out(args) and getattr(args, "h5ad_add", False):
        check_addable(args.out)
        return tuple(o for o in outputs if o != "--out")
    return outputs


def write_h5ad_result(args, result, algorithm_id: str, kind: str, ds=None, source: str | None = None,
                      fitted_mask=None) -> str:
    """Write or add the result (``ds``: the data set fitted, ``source``: the data file of apply;
    ``fitted_mask``: --fit-sample's fitted rows, written as ``obs['<method>_fitted']``)."""
    extra = None if fitted_mask is None else {f"{algorithm_id}_fitted": np.asarray(fitted_mask, dtype=bool)}
    if getattr(args, "h5ad_add", False):
        return add_to_h5ad(args.out, result, algorithm_id, kind, ds, extra_obs=extra)
    return write_h5ad(args.out, result, algorithm_id, kind, ds, source=source, extra_obs=extra)


def is_backed(ds) -> bool:
    """Whether the data set is the sample a backed loader read (the file has more rows)."""
    return bool((ds.load_options or {}).get("backed"))


def extend_backed(args, est, kind: str, algorithm_id: str, ds, chunk_rows: int = 50_000, progress=None) -> str:
    """Extend the model fitted on the sample ``ds`` to every row of ``args.data`` in chunks and
    write the result to ``args.out`` (CSV, .npy or .h5ad); returns the line to print."""
    to_h5ad = h5ad_out(args)
    rep = extend_source(est, args.data, options=dict(ds.load_options), out=None if to_h5ad else args.out,
                        train_feature_names=ds.feature_names, chunk_rows=chunk_rows, keep_values=to_h5ad,
                        progress=progress, escape_formulas=getattr(args, "escape_formulas", True))
    written = write_h5ad_result(args, rep.values, algorithm_id, kind, source=args.data) if to_h5ad else args.out
    return (f"{algorithm_id}: fitted on a sample of {ds.n_samples:,} rows of {Path(args.data).name}, extended to "
            f"all {rep.n_rows:,} rows in {rep.n_chunks:,} chunk(s) in {format_seconds(rep.seconds)}; peak memory "
            f"{rep.peak_memory_mb:,.0f} MB; wrote {written}")


def write_run_output(args, console, est, cls, ds, result, write_csv, fitted_mask=None) -> None:
    """Write ``run``'s result: to an .h5ad file (with ``fitted_mask``, --fit-sample's fitted rows,
    as an obs column), or extended to every row of a backed file (its sample was fitted), or else
    with ``write_csv()``."""
    if is_backed(ds):
        progress = console.progress(f"{cls.id} extend")
        try:
            console.info(extend_backed(args, est, cls.kind, cls.id, ds, progress=progress))
        finally:
            console.end_progress()
    elif h5ad_out(args):
        console.note(f"{args.out}: {write_h5ad_result(args, result, cls.id, cls.kind, ds, fitted_mask=fitted_mask)}")
    else:
        write_csv()


def apply_output(args) -> dict:
    """``extend_source``'s ``out`` / ``keep_values`` for ``apply``: an .h5ad file is written at the
    end from the values kept, any other output as the chunks go."""
    to_h5ad = h5ad_out(args)
    return {"out": None if to_h5ad else args.out, "keep_values": to_h5ad}


def isolated_out(args, algorithm_id: str) -> str:
    """The output of ``apply`` in a worker process (CSV / .npy only: an .h5ad file is refused)."""
    if h5ad_out(args):
        raise UsageError(f"--out .h5ad with the third-party model {algorithm_id} needs --in-process")
    return args.out


def apply_h5ad(args, est, rep):
    """``apply … --out FILE.h5ad``: the values kept by the extension (report ``rep``) written
    there, under the name of the model's algorithm (a pipeline's final one); returns ``rep``."""
    if h5ad_out(args):
        final = getattr(est, "final", None) or est
        written = write_h5ad_result(args, rep.values, final.id, final.kind, source=args.data)
        rep.notes.append(f"{args.out}: {written}")
    return rep
