"""Low-level file safety, below every other sub-package: atomic writes, size- and type-bounded readers, checked export paths."""
