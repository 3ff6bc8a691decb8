"""Tables (Qt-free): typed columns with roles and the readers that build them; the columns of a
data set, result tables, search and export (:mod:`.dataset_columns`, :mod:`.result_table`,
:mod:`.search`, :mod:`.export`).

Public names::

    from manifold_studio.tables import (Table, Column, ColumnInfo, read_table, preview_table,
                                        read_csv_table, read_excel_table, read_parquet_table,
                                        excel_sheets)

* :class:`Table` / :class:`Column` (:mod:`.model`): numeric, categorical, text and date/time
  columns, each with a role (feature, target, meta, skipped), a current target and row ids.
* :func:`read_table` (:mod:`.readers`): CSV/TSV, Excel, Parquet and Arrow/Feather through pandas, returning a
  :class:`ReadResult` (the table, with its load report in ``table.report``);
  :func:`preview_table` reads only the first rows (an import dialog's preview and column list).
* :func:`table_from_frame` (:mod:`.infer`): a DataFrame to a table, inferring types and roles.
* A data set is built from a table with :meth:`manifold_studio.data.Dataset.from_table`.
"""
from manifold_studio.tables.infer import MAX_CATEGORIES, table_from_frame
from manifold_studio.tables.model import (
    CATEGORICAL, COLUMN_TYPES, DATETIME, FEATURE, META, NUMERIC, ROLES, SKIPPED, TARGET, TEXT, Column,
    ColumnInfo, ReadResult, Table,
)
from manifold_studio.tables.readers import (
    ARROW_EXTENSIONS, DECIMALS, EXCEL_EXTENSIONS, NA_SPELLINGS, PARQUET_EXTENSIONS, excel_sheets, preview_table,
    read_arrow_table, read_csv_table, read_excel_table, read_parquet_table, read_table,
)

__all__ = ["Table", "Column", "ColumnInfo", "ReadResult", "read_table", "preview_table", "read_csv_table",
           "read_excel_table", "read_parquet_table", "read_arrow_table", "excel_sheets", "table_from_frame", "COLUMN_TYPES", "ROLES", "NUMERIC",
           "CATEGORICAL", "TEXT", "DATETIME", "FEATURE", "TARGET", "META", "SKIPPED", "MAX_CATEGORIES",
           "NA_SPELLINGS", "DECIMALS", "EXCEL_EXTENSIONS", "PARQUET_EXTENSIONS", "ARROW_EXTENSIONS"]
