"""Tables (Qt-free): the columns of a data set, result tables, search and export."""
